// UI strings in en and zh-CN; default from navigator.language, switchable, remembered in localStorage.
"use strict";
const STRINGS = {
  "en": {
    "health.unknown": "connecting…", "health.ok": "model ready", "health.loading": "loading models…", "health.down": "offline",
    "theme.toggle": "light / dark",
    "key.title": "Enter your API key", "key.save": "Save", "key.change": "API key",
    "key.help": "Printed by `linegate serve` on first start, or by `linegate keys create`.",
    "key.wrong": "This key was refused (401).",
    "chat.title": "Ask about the line", "chat.send": "Ask", "chat.placeholder": "What happened on the line in the last minutes?",
    "chat.sources": "Sources (click to show in the log)", "chat.query": "Store query:", "chat.busy": "The model is busy; asking again in {s} s…", "chat.gave_up": "The model is busy; try again in {s} s.",
    "chat.error": "Request failed: {e}",
    "alerts.title": "Alerts", "alerts.empty": "No alerts yet.", "alerts.explaining": "explanation pending…",
    "alerts.no_expl": "no explanation (model busy)",
    "alerts.learning": "learning ({n})",
    "alerts.kinds": "{n} new kinds",
    "alerts.learning_help": "No new-kind alerts from these sources until they have learned their routine (severity and rule alerts go out as usual):",
    "alerts.learning_source": "{source}: {lines} lines, {s} s to go",
    "kind.new_template": "new kind of line", "kind.severity": "severity", "kind.rule": "rule",
    "logs.title": "Logs", "logs.search": "Search logs (text)", "logs.host": "host", "logs.go": "Search", "logs.live": "Live",
    "logs.any_severity": "any severity", "logs.mode_live": "Live tail of the newest lines.",
    "logs.mode_search": "{n} results for the search.", "logs.mode_around": "Lines around source #{id}.",
    "status.title": "Status", "status.tok_s": "Decode tokens/s", "status.accept": "Draft acceptance",
    "status.kv": "KV cache: sink / ring / scratch", "status.drops": "Token queue drops /s", "status.misses": "Deadline misses",
    "status.ingest": "Ingest lines/s",
    "fact.model": "model", "fact.stream_tokens": "tokens read", "fact.engine_lag": "engine lag", "fact.oldest_unread": "oldest unread line",
    "fact.summarised_skipped": "lines summarised / skipped",
    "fact.stored_lines": "stored lines", "fact.jobs": "jobs admitted / refused", "fact.uptime": "uptime",
    "fleet.title": "Shipped to the plant (ClickHouse)", "fleet.box": "box", "fleet.shipped": "lines shipped",
    "fleet.pending": "lines pending", "fleet.oldest": "oldest unshipped", "fleet.age": "{s} s ago",
    "fleet.last_error": "last error", "fleet.no_error": "none", "fleet.dropped": "deleted before shipping",
    "chat.hint": "Questions are answered from the live log the model is reading, plus matching stored lines.",
    "sources.title": "Sources", "sources.empty": "No source has been learned yet.",
    "sources.learning": "{n} learning", "sources.learning_help": "Sources still reading their first lines: their format is learned from them.",
    "sources.relearned": "{n} relearned", "sources.relearned_help": "Formats learned again after a source's lines changed.",
    "sources.unnamed": "(no name)", "sources.lines": "learned from {n} lines",
    "sources.unsure": "no header found", "sources.unsure_help": "No time or header columns in its first lines: the model is asked for a layout.",
    "sources.proposed": "model proposed:", "sources.pattern": "pattern:", "sources.columns": "columns:", "sources.example": "e.g.",
    "sources.found": "{share} of lines", "sources.missing": "not found",
    "srckind.text": "text", "srckind.json": "JSON", "srckind.key=value": "key=value", "srckind.delimited": "delimited",
    "origin.induced": "learned", "origin.config": "config pattern", "origin.model": "model pattern",
    "field.time": "time", "field.level": "level", "field.host": "host", "field.component": "component", "field.pid": "pid",
  },
  "zh-CN": {
    "health.unknown": "连接中…", "health.ok": "模型就绪", "health.loading": "模型加载中…", "health.down": "离线",
    "theme.toggle": "浅色 / 深色",
    "key.title": "输入 API 密钥", "key.save": "保存", "key.change": "API 密钥",
    "key.help": "首次启动时由 `linegate serve` 打印，或用 `linegate keys create` 生成。",
    "key.wrong": "密钥被拒绝 (401)。",
    "chat.title": "询问产线情况", "chat.send": "提问", "chat.placeholder": "最近几分钟产线上发生了什么？",
    "chat.sources": "来源（点击在日志中查看）", "chat.query": "日志查询：", "chat.busy": "模型繁忙，{s} 秒后自动重试…", "chat.gave_up": "模型繁忙，请 {s} 秒后再试。",
    "chat.error": "请求失败：{e}",
    "alerts.title": "告警", "alerts.empty": "暂无告警。", "alerts.explaining": "正在生成解释…",
    "alerts.no_expl": "无解释（模型繁忙）",
    "alerts.learning": "学习中（{n}）",
    "alerts.kinds": "{n} 种新类型",
    "alerts.learning_help": "以下来源学完日常日志之前不发出新类型告警（严重级别和规则告警照常发出）：",
    "alerts.learning_source": "{source}：还需 {lines} 行、{s} 秒",
    "kind.new_template": "新类型日志", "kind.severity": "严重级别", "kind.rule": "规则",
    "logs.title": "日志", "logs.search": "搜索日志（文本）", "logs.host": "主机", "logs.go": "搜索", "logs.live": "实时",
    "logs.any_severity": "全部级别", "logs.mode_live": "实时显示最新日志。",
    "logs.mode_search": "搜索到 {n} 条结果。", "logs.mode_around": "来源 #{id} 附近的日志。",
    "status.title": "状态", "status.tok_s": "解码 token/秒", "status.accept": "草稿接受率",
    "status.kv": "KV 缓存：sink / ring / scratch", "status.drops": "令牌队列丢弃/秒", "status.misses": "超时次数",
    "status.ingest": "写入 行/秒",
    "fact.model": "模型", "fact.stream_tokens": "已读 token", "fact.engine_lag": "引擎延迟", "fact.oldest_unread": "最早未读的行",
    "fact.summarised_skipped": "已汇总 / 已跳过的行",
    "fact.stored_lines": "已存日志行", "fact.jobs": "任务 接受 / 拒绝", "fact.uptime": "运行时间",
    "fleet.title": "已发送到工厂（ClickHouse）", "fleet.box": "本机", "fleet.shipped": "已发送行",
    "fleet.pending": "待发送行", "fleet.oldest": "最早未发送", "fleet.age": "{s} 秒前",
    "fleet.last_error": "最近错误", "fleet.no_error": "无", "fleet.dropped": "发送前被删除",
    "chat.hint": "回答依据模型正在读取的实时日志，以及匹配的已存日志。",
    "sources.title": "日志来源", "sources.empty": "尚未学到任何来源的格式。",
    "sources.learning": "{n} 个学习中", "sources.learning_help": "这些来源仍在读取最初的日志行，格式将从中学习。",
    "sources.relearned": "{n} 次重新学习", "sources.relearned_help": "来源的日志行变化后重新学习的格式。",
    "sources.unnamed": "（无名称）", "sources.lines": "从 {n} 行学得",
    "sources.unsure": "未找到头部", "sources.unsure_help": "最初的日志行中没有时间或头部列：已请模型给出格式。",
    "sources.proposed": "模型提出：", "sources.pattern": "模式：", "sources.columns": "列：", "sources.example": "示例",
    "sources.found": "{share} 的行", "sources.missing": "未找到",
    "srckind.text": "文本", "srckind.json": "JSON", "srckind.key=value": "键=值", "srckind.delimited": "分隔符",
    "origin.induced": "自动学习", "origin.config": "配置模式", "origin.model": "模型模式",
    "field.time": "时间", "field.level": "级别", "field.host": "主机", "field.component": "组件", "field.pid": "进程号",
  },
};
const I18N = {
  lang: "en",
  init() {
    const saved = localStorage.getItem("linegate.lang");
    const nav = (navigator.language || "en").toLowerCase();
    this.lang = saved && STRINGS[saved] ? saved : (nav.startsWith("zh") ? "zh-CN" : "en");
    this.apply();
  },
  t(key, vars) {
    let s = (STRINGS[this.lang] && STRINGS[this.lang][key]) || STRINGS.en[key] || key;
    for (const [k, v] of Object.entries(vars || {})) s = s.replace("{" + k + "}", String(v));
    return s;
  },
  set(lang) { this.lang = lang; localStorage.setItem("linegate.lang", lang); this.apply(); },
  toggle() { this.set(this.lang === "en" ? "zh-CN" : "en"); },
  apply() {
    document.documentElement.lang = this.lang;
    for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = this.t(el.dataset.i18n);
    for (const el of document.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = this.t(el.dataset.i18nPlaceholder);
    for (const el of document.querySelectorAll("[data-i18n-title]")) el.title = this.t(el.dataset.i18nTitle);
    const btn = document.getElementById("lang-toggle");
    if (btn) btn.textContent = this.lang === "en" ? "中文" : "EN";
    document.dispatchEvent(new CustomEvent("langchange"));
  },
};
