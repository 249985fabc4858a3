"""Chinese words of an operator's question -> the English words a log would say them with.

A Chinese question about an English log shares no word with it, so the store-query grammar cannot
ground its text filter, host or `by` field on the question (gateway.serve.answer.question). This table holds
the plant-floor and IT vocabulary operators use (machines, faults, measurements, sessions, storage),
each term with English stems a log line writes; a stem offers every log word sharing its first
letters ("detect" ~ "detected"). FRAMING holds the words of a question's frame (how many, when,
which, between, the log): a Chinese question left with nothing beyond its frame asks for no text.
"""

from __future__ import annotations

GLOSSARY: dict[str, tuple[str, ...]] = {
    # faults and states
    "卡瓶": ("jam",), "卡料": ("jam",), "卡住": ("jam", "stuck"), "堵塞": ("jam", "block"), "急停": ("e-stop", "estop", "emergency"),
    "故障": ("fault",), "报警": ("alarm",), "告警": ("alarm", "alert"), "超温": ("over-temperature", "overtemp"),
    "过热": ("over-temperature", "overheat"), "跳闸": ("trip",), "停机": ("stop", "stopped", "halt"),
    "停止": ("stop", "stopped"), "停了": ("stop", "stopped"), "启动": ("start", "started"), "重启": ("restart", "reboot"),
    "关闭": ("close", "closed", "shutdown"), "打开": ("open", "opened"), "恢复": ("recover", "restore", "resume"),
    "复位": ("reset",), "清除": ("clear", "cleared"), "处理": ("clear", "cleared", "handle"), "检测": ("detect", "detected"),
    "按下": ("pressed", "press"), "失败": ("fail", "failed", "failure"), "异常": ("exception", "abnormal"),
    "超时": ("timeout", "timed"), "拒绝": ("refused", "denied", "reject"), "中断": ("interrupt",),
    "丢失": ("lost", "missing"), "断开": ("disconnect", "disconnected", "closed"), "连接": ("connect", "connection"),
    # what software writes of its work (jobs, transfers, sessions): the verbs of most IT logs
    "成功": ("success", "succeeded", "successful"), "完成": ("finish", "finished", "complete", "completed", "done"),
    "结束": ("end", "ended", "finish", "finished"), "开始": ("start", "started", "begin"), "运行": ("run", "running"),
    "分配": ("assign", "assigned", "allocate", "allocated"), "发送": ("send", "sent"), "接收": ("receive", "received"),
    "收到": ("receive", "received", "got"), "删除": ("delete", "deleted", "remove", "removed"), "创建": ("create", "created"),
    "注册": ("register", "registered"), "退出": ("exit", "exited"), "终止": ("terminate", "terminated", "kill", "killed"),
    "读取": ("read", "reading"), "写入": ("write", "writing", "written"), "重试": ("retry", "retries", "retrying"),
    "更新": ("update", "updated"), "加载": ("load", "loaded"), "保存": ("save", "saved"), "上报": ("report", "reported"),
    "跑完": ("finish", "finished", "complete", "completed"), "跑起来": ("start", "started", "run", "running"),
    "挂掉": ("fail", "failed", "died", "killed"), "挂了": ("fail", "failed", "died", "killed"), "崩溃": ("crash", "crashed"),
    "无效": ("invalid",), "找到": ("found",), "验证": ("verify", "verified", "verification"), "同步": ("sync",),
    # machines and places
    "输送带": ("conveyor",), "传送带": ("conveyor",), "封盖机": ("capper",), "封盖": ("capper", "cap"),
    "灌装机": ("filler",), "灌装": ("filler", "fill"), "贴标机": ("labeler",), "贴标": ("labeler", "label"),
    "装箱机": ("casepacker",), "加热区": ("heater", "zone"), "加热": ("heater", "heat"), "电机": ("motor",),
    "传感器": ("sensor",), "光电": ("photoeye",), "阀": ("valve",), "泵": ("pump",), "瓶": ("bottle",),
    "操作员": ("operator",), "工位": ("station",), "节点": ("node",), "服务器": ("server",), "主机": ("host",),
    "组件": ("component",), "模块": ("component",), "程序": ("program", "process"), "服务": ("service",), "容器": ("container",), "任务": ("task", "job"), "作业": ("job",), "线程": ("thread",),
    "进程": ("process",), "会话": ("session",), "用户": ("user",), "密码": ("password",), "登录": ("login", "logged"),
    "认证": ("authentication", "auth"), "端口": ("port",), "地址": ("address",), "网络": ("network",),
    "请求": ("request",), "响应": ("response",), "文件": ("file",), "磁盘": ("disk",), "内存": ("memory",),
    "块": ("block",), "数据": ("data",), "字节": ("bytes",), "大小": ("size",), "进度": ("progress",), "阶段": ("stage",),
    "尝试": ("attempt",), "分区": ("partition",), "副本": ("replica",), "广播": ("broadcast",), "变量": ("variable",),
    "应用": ("application", "app"), "账号": ("user", "account"), "账户": ("user", "account"), "客户端": ("client",),
    "目录": ("directory", "dir"), "路径": ("path",), "权限": ("permission",), "队列": ("queue",), "内核": ("kernel",),
    "心跳": ("heartbeat",), "缓存": ("cache",), "周期": ("cycle",),
    # measurements
    "温度": ("temperature",), "扭矩": ("torque",), "压力": ("pressure",), "速度": ("speed",), "转速": ("speed", "rpm"),
    "液位": ("level",), "灌装量": ("fill",), "总数": ("total",), "计数": ("count",), "产量": ("bottles", "total"),
    "电流": ("current",), "电压": ("voltage",), "流量": ("flow",), "重量": ("weight",), "标签卷": ("label", "roll"),
}

FRAMING = (
    "为什么", "什么时候", "含两端", "行数", "条数", "哪一行", "这一行", "那一行", "多少", "一共", "总共", "记录", "日志", "之间", "出现",
    "发生", "产生", "输出", "打印", "形如", "哪个", "哪些", "哪类", "哪台", "哪里", "什么", "时候", "原因", "主要",
    "最大", "最小", "最高", "最低", "平均", "最多", "最少", "最常", "最近", "刚才", "过去", "分钟", "小时", "今天",
    "昨天", "以来", "第一次", "最后一次", "请问", "消息", "级别", "等级", "次数", "数量", "所有", "全部", "一下", "情况",
    "是", "的", "了", "在", "到", "从", "有", "里", "中", "上", "下", "这", "那", "哪", "个", "条", "行", "次", "类",
    "值", "前", "名", "和", "与", "及", "或", "吗", "呢", "么", "被", "把", "让", "一", "几", "多", "少", "最", "第",
    "秒", "天", "内", "为", "时", "后", "每", "都", "还", "又", "就", "该", "其", "中的", "我", "们", "你", "要", "看",
    "刷", "得",        # "刷日志刷得最多": writing lines (as 输出, 打印), and a particle
    "打", "那边", "这边", "边",   # "那边打了多少条日志": writing lines (打日志), and where ("over there")
)


# The frame's words in English, for the call's prompt: the 1.5B reads an English question's frame
# ("which ... most", "how many", "the largest") far better than a Chinese one's.
FRAME_ENGLISH: dict[str, str] = {
    "为什么": "why", "什么时候": "when", "多少": "how many / how much", "一共": "in total", "总共": "in total",
    "哪个": "which", "哪些": "which", "哪类": "which kind", "哪台": "which machine", "哪一行": "which line",
    "最大": "largest", "最小": "smallest", "最高": "highest", "最低": "lowest", "平均": "average",
    "最多": "the most", "最少": "the least", "最常": "most often", "第一次": "first time", "最后一次": "last time",
    "最近": "recent / latest", "之间": "between", "行数": "number of lines", "条数": "number of lines",
    "次数": "number of times", "数量": "number", "总和": "sum", "合计": "sum", "加起来": "sum", "记录": "entries",
    "日志": "log lines", "出现": "appear", "输出": "write", "产生": "produce", "级别": "level", "原因": "cause",
    "前面": "before", "后面": "after", "分钟": "minutes", "小时": "hours",
}


def gloss(question: str) -> str:
    """"哪个=which, 组件=component, ..." for the Chinese words of `question` the tables know (longest
    first, in the question's order); "" when none."""
    table = {**{t: "/".join(e) for t, e in GLOSSARY.items()}, **FRAME_ENGLISH}
    found: list[tuple[int, str]] = []
    rest = question
    for term in sorted(table, key=len, reverse=True):
        at = rest.find(term)
        if at >= 0:
            found.append((at, f"{term}={table[term]}"))
            rest = rest.replace(term, " " * len(term))
    return ", ".join(x for _, x in sorted(found))


def english_terms(question: str) -> list[str]:
    """English stems for the glossary terms in `question` (longest terms first: 封盖机 before 封盖)."""
    return list(dict.fromkeys(w for group in term_groups(question) for w in group))


def term_groups(question: str) -> list[tuple[str, ...]]:
    """The English stems of each glossary term in `question`, a tuple per term (english_terms' order)."""
    out: list[tuple[str, ...]] = []
    rest = question
    for term in sorted(GLOSSARY, key=len, reverse=True):
        if term in rest:
            out.append(GLOSSARY[term])
            rest = rest.replace(term, " ")
    return out


def term_at(text: str) -> tuple[str, ...]:
    """English stems of the glossary term `text` starts with (the longest), else ()."""
    for term in sorted(GLOSSARY, key=len, reverse=True):
        if text.startswith(term):
            return GLOSSARY[term]
    return ()


def han_content(question: str) -> str:
    """The Chinese characters of `question` beyond its frame and its glossary terms."""
    rest = question
    for w in sorted((*GLOSSARY, *FRAMING), key=len, reverse=True):
        rest = rest.replace(w, " ")
    return "".join(ch for ch in rest if "\u4e00" <= ch <= "\u9fff")
