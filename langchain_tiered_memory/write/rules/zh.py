"""Chinese: the word lists, the rules and the whole-sentence reads (a dated plan, a phone number).

Example:
    >>> [(f.subject, f.content) for f in sentence_facts("我的航班改到明天下午3点")]
    [('plan:航班', '我的航班改到明天下午3点')]
"""

from __future__ import annotations

import re

from langchain_tiered_memory.write.candidate import Candidate
from langchain_tiered_memory.write.rules.engine import Language, Rule, rule, says
from langchain_tiered_memory.write.rules.filters import HEDGE, REJECTED, is_question
from langchain_tiered_memory.write.rules.text import clauses

ZH_LANG = (
    "繁体字|繁体中文|繁体|简体字|简体中文|简体|英文|英语|中文|汉语|普通话|粤语|日语|日文|"
    "韩语|韩文|法语|法文|德语|德文|西班牙语|葡萄牙语|俄语|意大利语|阿拉伯语|泰语|越南语"
)
ZH_REL = (
    "老婆|老公|妻子|丈夫|太太|先生|爱人|对象|男朋友|女朋友|男友|女友|未婚夫|未婚妻|儿子|女儿|"
    "孩子|宝宝|大宝|二宝|闺女|妈妈|爸爸|母亲|父亲|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|"
    "姥姥|姥爷"
)
ZH_OTHERS = (
    r"(?:同事|朋友|同学|室友|邻居|老板|领导|客户|他|她|它|他们|她们|别人|家人|"
    + "老婆|老公|妻子|丈夫|太太|先生|爱人|男朋友|女朋友|儿子|女儿|孩子|宝宝|妈妈|爸爸|哥哥|姐姐|"
    + "弟弟|妹妹|爷爷|奶奶)"
)
ZH_PET = (
    "狗狗|小狗|狗|猫咪|小猫|猫|兔子|仓鼠|鹦鹉|乌龟|金鱼|柯基|泰迪|金毛|哈士奇|柴犬|拉布拉多|"
    "边牧|比熊|博美|萨摩耶|英短|美短|布偶|橘猫|狸花猫"
)
ZH_JOBS = (
    "老师|教师|医生|护士|律师|会计|工程师|程序员|设计师|产品经理|项目经理|经理|学生|研究生|"
    "博士生|大学生|销售|记者|编辑|厨师|司机|警察|公务员|运营|柜员|作家|画家|演员|歌手|"
    "摄影师|建筑师|药剂师|翻译|咨询师|分析师|研究员|科学家|教授|自由职业者|创业者|店主|"
    "农民|工人|快递员|外卖员|保安|主播|博主|飞行员|空姐|空乘|军人|消防员|牙医|兽医|"
    "心理咨询师|会计师|审计师|客服|前台|秘书|助理|实习生|产品|开发|测试|数据分析师"
)
ZH_EVENTS = (
    "航班|飞机|火车|高铁|动车|面试|考试|婚礼|会议|预约|门诊|复查|体检|手术|聚会|旅行|出差|"
    "约会|演出|比赛|签证|讲座|课|培训|年会|答辩|搬家"
)
ZH_NUM = "[0-9一二三四五六七八九十两]"
ZH_TIME = (
    rf"(?:{ZH_NUM}+点(?:{ZH_NUM}+分?|半|一刻|钟)?|\d{{1,2}}[:：]\d{{2}}|(?:下|这|本|上)?"
    rf"(?:个)?(?:周|星期|礼拜)[一二三四五六日天]|{ZH_NUM}+月{ZH_NUM}+[日号]|明天|后天|今晚|"
    rf"今天|下周|下个月|月底|月初|周末)"
)


_ZH_PLACE = r"(?P<place>[\u4e00-\u9fffA-Za-z]{2,10}?)"
_ZH_AFTER_PLACE = r"(?=了|来|去|住|这边|那边|以后|之后|后|，|,|。|！|!|？|\?|；|的时候|$)"


def _allergy(m: re.Match[str], _: str) -> tuple[str, str] | None:
    """我对花生过敏 (not 我同事对猫过敏: someone else's)."""
    what = m.group("x") or m.group("y")
    return None if re.match(ZH_OTHERS, what) else (f"allergy:{what}", f"对{what}过敏")


def _kin_named(m: re.Match[str], _: str) -> tuple[str, str]:
    """我女儿叫朵朵, 我家养了一只猫叫咪咪: a pet or a relative, and the name."""
    kin = m.group("kin")
    subject = f"pet:{kin}" if re.fullmatch(ZH_PET, kin) else f"family:{kin}"
    return subject, f"{kin}叫{m.group('name')}"


def _lives_in(m: re.Match[str], _: str) -> tuple[str, str] | None:
    """我住在上海 (but not 我在上海出差: being somewhere is not living there)."""
    return (
        ("home_city", f"住在{m.group('place')}") if re.search(r"住|生活|定居", m.group(0)) else None
    )


def _likes(m: re.Match[str], _: str) -> tuple[str, str]:
    return f"likes:{m.group('x')}", f"{'不' if m.group('neg') else ''}喜欢{m.group('x')}"


def _note(m: re.Match[str], _: str) -> tuple[str, str]:
    return f"note:{m.group('x')[:20]}", m.group("x")


ZH_RULES: list[Rule] = [
    rule(
        r"我(?:(?:对|吃)(?P<x>[^，。！？,.!?]{1,12}?)(?:严重|有点|会|特别|非常)?过敏|(?:有|会)?"
        r"(?P<y>[^对的，。！？,.!?]{1,6}?)过敏(?:症)?)",
        _allergy,
        importance=9.0,
    ),
    rule(
        r"我(?:不能|不可以|没法|一点都不能|不能再)(?:吃|喝|碰)(?P<x>[^，。！？,.!?]{1,10})",
        says("avoids:{x}", "不能吃{x}"),
        importance=9.0,
    ),
    rule(
        r"我(?:现在|已经|一直|从小)?(?:是)?(?P<x>吃素|吃全素|素食者|素食主义者|纯素食者|纯素|"
        r"生酮饮食|穆斯林|清真)",
        says("diet", "{x}"),
        importance=8.5,
    ),
    rule(
        r"我(?:现在|已经|一直)?不吃(?P<x>肉|猪肉|牛肉|羊肉|海鲜|鱼|辣|鸡蛋|乳制品|牛奶|香菜|葱|"
        r"蒜|糖|甜食|面食|麸质)",
        says("avoids:{x}", "不吃{x}"),
        importance=8.5,
    ),
    rule(
        r"我(?:有|患有|得了)(?P<x>哮喘|糖尿病|高血压|低血压|胃病|心脏病|癫痫|过敏性鼻炎|鼻炎|"
        r"抑郁症|焦虑症|失眠|偏头痛|关节炎|湿疹|痛风|贫血|甲亢|甲减)",
        says("health:{x}", "有{x}"),
        importance=9.0,
    ),
    rule(
        r"我(?:是|有点|有)?(?P<x>左撇子|色盲|近视|远视|高度近视|乳糖不耐受|麸质不耐受|素食者)",
        says("health:{x}", "{x}"),
        importance=8.0,
    ),
    rule(
        rf"我(?:已经)?怀孕(?:了)?(?P<x>{ZH_NUM}+(?:周|个月))?",
        says("health:pregnancy", "怀孕{x}"),
        importance=9.0,
    ),
    rule(
        rf"我(?:们)?(?:家)?(?:的)?(?P<kin>{ZH_REL}|{ZH_PET})(?:的名字)?(?:叫|名叫|叫做|的名字是)"
        r"(?P<name>[\u4e00-\u9fffA-Za-z]{1,6}?)(?=[，。！？,.!?、；\s]|今年|$)",
        _kin_named,
        importance=7.0,
    ),
    rule(
        rf"我(?:们)?(?:家)?(?:养了|有)(?:一只|一条|一个|只|条|个)(?P<kin>{ZH_PET}|{ZH_REL})"
        r"[，,]?(?:叫|名叫|叫做)(?P<name>[\u4e00-\u9fffA-Za-z]{1,6}?)(?=[，。！？,.!?、；\s]|$)",
        _kin_named,
        importance=7.0,
    ),
    rule(
        r"我(?:叫|的名字是|名叫)(?P<x>[^\s，。！？,.!?]{1,12}?)(?=[，。！？,.!?]|$)",
        says("name", "{x}"),
        importance=7.5,
    ),
    rule(
        rf"我(?:今年|现在|已经)?(?P<x>{ZH_NUM}{{1,3}})岁",
        says("age", "{x}岁"),
        importance=6.5,
    ),
    rule(
        r"我的?生日(?:是|在)?(?P<x>[0-9一二三四五六七八九十]+月[0-9一二三四五六七八九十]+[日号])",
        says("birthday", "生日{x}"),
        importance=7.5,
    ),
    rule(
        rf"我(?:们)?(?:家)?(?:现在|目前|一直|也)?(?:住在|生活在|定居在|在){_ZH_PLACE}(?:住|生活|定居)?"
        rf"{_ZH_AFTER_PLACE}",
        _lives_in,
        importance=6.5,
    ),
    rule(
        rf"我(?:们)?(?:已经|刚|刚刚|终于)?(?:[\u4e00-\u9fff]{{0,4}}?)搬(?:到|去|家到)(?:了)?"
        rf"{_ZH_PLACE}{_ZH_AFTER_PLACE}",
        says("home_city", "搬到了{place}"),
        importance=6.5,
    ),
    rule(
        rf"(?:我|^)(?:现在|目前|如今)?(?:在|是)(?P<org>.{{2,20}})(?P<verb>当|做|担任|干)(?P<job>"
        rf"[\u4e00-\u9fff]{{0,4}}(?:{ZH_JOBS}))",
        says("work", "在{org}{verb}{job}"),
        importance=6.5,
    ),
    rule(
        r"(?:我|^)(?:现在|目前|如今)?在(?P<org>[^，。！？,.!?]{0,10}?(?:公司|企业|外企|国企|银行|医院|"
        r"学校|大学|工厂|厂|店|局|集团|机构|事务所|研究所|律所|工作室|报社|电视台|政府|部门))"
        r"(?P<verb>当|做|担任|干)(?P<job>[\u4e00-\u9fff]{2,6}?)(?=[，。！？,.!?、；\s]|$)",
        says("work", "在{org}{verb}{job}"),
        importance=6.5,
    ),
    rule(
        r"(?:我|^)(?:现在|目前)?在(?P<org>[^，。！？,.!?]{2,20}?)(?:工作|上班|实习)",
        says("work", "在{org}工作"),
        importance=6.5,
    ),
    rule(
        rf"我(?:现在|目前)?是(?:一名|一个|一位|个|名)?(?P<job>[\u4e00-\u9fff]{{0,4}}?"
        rf"(?:{ZH_JOBS}))(?=[，。！？,.!?、；\s]|$)",
        says("work", "{job}"),
        importance=6.5,
    ),
    rule(
        rf"(?:请|麻烦|以后|之后|你|一直|总是|都)+(?:一直|总是|都)?用(?P<x>{ZH_LANG})(?:来)?"
        r"(?:回复|回答|跟我说|和我说|交流|写|聊)",
        says("answer_language", "用{x}回复"),
        importance=8.0,
    ),
    rule(
        rf"我(?:会说|会讲|说|讲)(?P<x>(?:{ZH_LANG})(?:(?:和|、|跟)(?:{ZH_LANG}))*)",
        says("languages", "会说{x}"),
        importance=6.0,
    ),
    rule(
        r"我(?:很|非常|最|也|特别|超)?(?P<neg>不再|不|不太)?喜欢(?P<x>[^，。！？,.!?]{1,15})",
        _likes,
        category="preference",
        importance=5.5,
    ),
    rule(
        r"我(?:很|非常|最|特别)?(?:讨厌|受不了|不爱)(?P<x>[^，。！？,.!?]{1,15})",
        says("likes:{x}", "不喜欢{x}"),
        category="preference",
        importance=5.5,
    ),
    rule(
        r"预算(?:是|有|大概|在|为|差不多|最多)*(?P<x>\d[\d,.]*\s*(?:万|千|百)?(?:元|块|美元|欧元|"
        r"英镑)?)",
        says("budget:*", "预算{x}"),
        importance=6.0,
    ),
    rule(
        r"(?:请)?记住(?P<x>.{2,})",
        _note,
        importance=6.0,
        fallback=True,
    ),
]
ZH_PHONE = re.compile(r"(?:手机号|号码|电话|手机|联系方式)[^。！？]{0,12}?(?P<x>\+?\d[\d -]{6,}\d)")
ZH_EVENT_RULE = re.compile(rf"(?P<event>{ZH_EVENTS})")
ZH_TIME_RULE = re.compile(ZH_TIME)


def zh_plan_sentence(sentence: str) -> Candidate | None:
    """A dated event in a Chinese sentence ("航班改了，改成下午3点40起飞")."""
    event = ZH_EVENT_RULE.search(sentence)
    if not event or not ZH_TIME_RULE.search(sentence):
        return None
    kept = [c for c in clauses(sentence) if not is_question(c)]
    content = "，".join(c.strip("。！!.") for c in kept)
    if not content or not ZH_TIME_RULE.search(content):
        return None
    return Candidate.found(
        f"plan:{event.group('event')}",
        content,
        category="plan",
        importance=7.0,
        hedged=bool(HEDGE.search(content)),
    )


def skip_sentence(sentence: str) -> bool:
    """ "本来想辞职去大理开民宿，后来想想还是算了": a Chinese sentence rejects or supposes
    as a whole (its clauses are split at every comma)."""
    return bool(REJECTED.search(sentence) or re.search(r"如果|假如|假设|要是|万一", sentence))


def sentence_facts(sentence: str) -> list[Candidate]:
    """A dated plan and a phone number read from a whole sentence ("我换了新号码，139...")."""
    found = []
    if plan := zh_plan_sentence(sentence):
        found.append(plan)
    if phone := ZH_PHONE.search(sentence):
        found.append(Candidate.found("phone", f"电话{phone.group('x')}", importance=6.5))
    return found


CHINESE = Language(
    "zh",
    rules=tuple(ZH_RULES),
    script=re.compile(r"[\u4e00-\u9fff]"),
    skip_sentence=skip_sentence,
    sentence_facts=sentence_facts,
)
