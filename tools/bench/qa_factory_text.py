"""The words of tools/bench/qa_factory.py's questions: per kind, its six wordings (English then Chinese,
each formal, terse, colloquial), what a station is called per shape, and what each quantity parameter
of tools/bench/synth_logs.py is called, which of them add up, which identify a line. Data only.
"""
from __future__ import annotations

# ---- wordings: per kind, en then zh, each (formal, terse, colloquial) ----
# {L} level word, {N} host noun, {H} host, {C} component, {G} group noun, {P} event phrase, {X} quantity,
# {Y}/{V} a key field and its value, {W} an optional condition (one host), {E} what is counted, {M} minutes,
# {D}/{DT} decimals of an average.
WORDINGS = {}                   # kind -> (en formal, en terse, en colloquial, zh formal, zh terse, zh colloquial)
for _ln in """
count-level en: What is the total number of {L} entries in the log? | # of {L} lines | how many {L} ones have we had so far
count-level zh: 日志中共有多少条 {L} 级别的记录？ | {L} 条数？ | 到现在一共报了几次 {L} 啊
count-host en: How many log entries did {N} {H} produce? | {H} line count | how much has {H} logged, how many lines?
count-host zh: {N} {H} 总共产生了多少条日志？ | {H} 日志数 | {H} 那边打了多少条日志了
count-component en: How many entries were written by the {C} component? | lines from {C}? | how many messages has {C} put out
count-component zh: {C} 模块一共写了多少条日志？ | {C} 行数 | {C} 那边出了几条消息
count-event en: How many times does "{P}" occur in the log? | "{P}" - how many? | how often did we get "{P}"
count-event zh: 日志里“{P}”一共出现了多少次？ | "{P}" 次数 | "{P}" 这个报了多少回了
count-value en: How many "{P}" entries have {Y} {V}? | "{P}" with {Y} {V}: count? | how many of the "{P}" ones were for {Y} {V}
count-value zh: “{P}”记录中 {Y} 为 {V} 的有多少条？ | "{P}" {Y}={V} 条数 | {Y} {V} 的 "{P}" 有几条
top-k en: Which {G} logged the most {E}? | most {E}: which {G}? | which {G} is throwing the most {E}
top-k zh: 哪个{G}记录的{E}最多？ | {E}最多的{G} | 哪个{G}报{E}报得最多
first-time en: At what time was "{P}" first logged? | first "{P}" - time? | when did "{P}" start showing up
first-time zh: “{P}”最早是在什么时间记录的？ | "{P}" 首次时间 | "{P}" 最开始是啥时候出的
last-time en: At what time was "{P}" most recently logged? | latest "{P}" timestamp? | when did we last get "{P}"
last-time zh: “{P}”最近一次记录是在什么时间？ | "{P}" 最近一次时间 | "{P}" 上一回是几点出的
max en: What is the highest {X} recorded in "{P}" entries? | peak {X}, "{P}"? | how high did the {X} go in the "{P}" messages
max zh: 在“{P}”记录中，{X}的最高值是多少？ | "{P}" {X}峰值 | "{P}" 里{X}最高到过多少
min en: What is the lowest {X} in "{P}" entries{W}? | min {X}, "{P}"{W}? | what's the smallest {X} we got in "{P}"{W}
min zh: {W}“{P}”记录中{X}的最低值是多少？ | {W}"{P}" {X}最小值 | {W}"{P}" 里{X}最低是多少
avg en: What is the mean {X} across "{P}" entries{W}, rounded to {DT}? | avg {X}, "{P}"{W} ({D} dp)? | what's the average {X} for "{P}"{W}? give it to {D} decimals
avg zh: {W}“{P}”记录的{X}平均值是多少（保留 {D} 位小数）？ | {W}"{P}" {X}均值，{D}位小数 | {W}"{P}" 的{X}平均下来多少？保留{D}位小数
sum en: What is the sum of the {X} over all "{P}" entries{W}? | total {X}, "{P}"{W}? | add up the {X} from every "{P}"{W} - what do you get
sum zh: {W}所有“{P}”记录的{X}合计是多少？ | {W}"{P}" {X}总计 | {W}"{P}" 的{X}加一起一共多少
lookup-host en: Which {N} reported the "{P}" entry with {Y} {V}? | "{P}" {Y} {V} - which {N}? | who logged the "{P}" one with {Y} {V}, which {N}?
lookup-host zh: {Y} 为 {V} 的那条“{P}”是哪个{N}上报的？ | "{P}" {Y} {V} 来自哪个{N} | {Y} {V} 那条 "{P}" 是哪个{N}报的啊
lookup-value en: In the "{P}" entry with {Y} {V}, what was the {X}? | "{P}" {Y} {V}: {X}? | for the "{P}" with {Y} {V}, what {X} did it show
lookup-value zh: {Y} 为 {V} 的那条“{P}”记录中，{X}是什么？ | "{P}" {Y} {V} 的{X} | {Y} {V} 那条 "{P}" 里{X}是啥
last-value en: What was the most recent {X} reported in "{P}" entries{W}? | last {X}, "{P}"{W}? | what's the latest {X} we got in "{P}"{W}
last-value zh: {W}最近一次“{P}”记录中的{X}是多少？ | {W}最新 "{P}" {X} | {W}最后一次 "{P}" 的{X}是多少
time-window en: How many {E} were logged in the last {M} minutes of the log, counting back from its newest entry? | {E} in last {M} min (from newest line)? | how many {E} in the final {M} minutes, measured back from the latest line
time-window zh: 以最新一条日志为准，最近 {M} 分钟内有多少条{E}？ | 最近{M}分钟{E}条数（以最新一行为准） | 从最后一条日志往前推 {M} 分钟，{E}出了几条
two-asks en: How many {E} are there, and which {G} logged the most of them? | {E}: count, and top {G}? | how many {E} did we get, and which {G} had the most
two-asks zh: {E}一共有多少条？其中哪个{G}最多？ | {E}总数及最多的{G} | {E}出了几次？哪个{G}出得最多
""".strip().splitlines():
    _kind, _ws = _ln.split(" ", 1)[0], _ln.split(": ", 1)[1].split(" | ")
    WORDINGS[_kind] = WORDINGS.get(_kind, ()) + tuple(_ws)
KINDS = tuple(WORDINGS)
HOST_NOUN = {"chinese": ("station", "工位"), "k8s_json": ("node", "节点"), "rfc5424": ("host", "主机"),
             "rfc3164": ("host", "主机"), "journald_json": ("host", "主机"), "invented_4": ("meter", "表计")}
DEFAULT_NOUN = ("machine", "设备")
COND = (" on {N} {H}", "{N} {H} ")           # {W}: en, zh

# ---- parameters: what a quantity is called, which integer params are quantities ----
LABELS = {k: tuple(v.split("|")) for k, v in (e.split(" = ") for e in """
temp = temperature|温度; bar = pressure|压力; p = air pressure|气压; rpm = speed|转速; ms = time in ms|耗时（毫秒）
sec = duration in seconds|时长（秒）; min = time in minutes|时长（分钟）; amp = current|电流; volt = voltage|电压
pct = percentage|百分比; kg = weight|重量; weight = weight|重量; qty = quantity|数量; ok = good parts|合格数
ng = rejected parts|不良数; count = count|数量; speed = speed|速度; flow = flow|流量; kw = power|功率
kwh = meter reading|表读数; err = following error|跟随误差; dev = deviation|偏差; tol = tolerance|公差
height = shut height|闭合高度; ml = amount dispensed|出油量; strokes = strokes|冲程数; spm = stroke rate|冲程速率
thd = THD|谐波畸变率; pa = differential pressure|压差; sp = setpoint|设定值; conc = concentration|浓度; force = force|力
vacuum = vacuum|真空度; score = score|评分; cycle = cycle number|循环号; app_json/cycle = cycle time|节拍时间
journald_json/dev = device|设备; kb = total-vm in kB|虚拟内存（kB）; idx = ifIndex|接口索引
offset = time offset in s|时间偏差（秒）; nodes = node count|节点数; days = days to expiry|剩余天数
replicas = replicas|副本数; sub = subscription|订阅号; dir = directory|目录; pkg = package|应用包; svc = service|服务; dur = duration|时长; lim = limit|上限; image = image|镜像; x = x position|x 坐标
y = y position|y 坐标; amount = order total|金额; attempt = attempt|重试次数; hr = HRESULT|HRESULT
store = store number|存储号; seq = sequence id|序号; field = null field|空字段; sku = SKU|SKU
mem = memory limit|内存限制; source = source|来源; signal = signal|信号; spool = spool|焊丝盘; die = die|模具
stroke = stroke number|冲程号; lc = light curtain|光幕; prog = program number|程序号; size = size|大小
session = session|会话; cid = container id|容器 ID; pod = pod|Pod; container = container|容器; node = node|节点
ns = namespace|命名空间; user = user|用户; bytes = response size|响应字节数; delay = delay|延迟
rssi = signal strength|信号强度; mm = offset|偏移量; pos = position|位置; watchdog = watchdog limit|看门狗时间
layers = layers|层数; limit = limit|上限; zone = zone|区; door = door|门; pump = pump|泵; axis = axis|轴
motor = motor|电机; unit = unit|单元; tool = tool|刀具; alarm = alarm number|报警号; code = code|代码; slave = slave|从站
seam = seam|焊缝; channel = channel|通道; boiler = boiler|锅炉; phase = phase|相; button = button|按钮
material = material|物料; drive = drive|驱动器; panel = panel|面板; point = point|点位; eye = photo eye|光电开关
scale = scale|秤; agv = AGV|AGV; status = status|状态码; text = fault text|故障描述; reason = reason|原因
defect = defect|缺陷; error = error|错误; file = file|文件; filter = filter|过滤器; recipe = recipe|配方
program = program|程序; serial = serial|序列号; wo = work order|工单; order = order|订单
""".strip().replace("\n", "; ").split("; "))}
QTY_INT = {"rssi", "pct", "count", "objs", "sec", "strokes", "nodes", "replicas", "rules", "days", "qty", "ok",
           "ng", "attempt", "delta", "bytes", "speed", "vacuum", "rpm", "spm", "min", "amp", "pos", "temp", "pa",
           "watchdog", "layers", "rop", "sp", "kb"}
SUMMABLE = {"count", "qty", "ok", "ng", "bytes", "kg", "ml", "objs", "weight", "sec", "min", "ms", "strokes",
            "layers"}
KEY_KINDS = {"int", "pick", "id", "wo", "order", "sku", "barcode", "hex", "pod"}
NOT_KEYS = {"pid", "port", "tid", "uid", "ip", "user", "stamp", "build", "rev", "inode", "addr", "h", "fp"}
NOT_QTY = {"stamp"}
UNITS = {"bar", "°C", "℃", "A", "V", "kW", "kWh", "MPa", "ms", "s", "%", "mm", "kg", "l/min", "rpm", "Pa", "N",
         "kPa", "min", "m/s", "m/min", "spm", "kB", "KB", "MB", "GB"}
