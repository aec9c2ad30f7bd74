"""Offline fact patterns: which clauses state a fact about the user (English and Chinese).

The rule-based extractor's engine, pure functions over text. :func:`find_facts`
reads one user message and returns what it says about the user, as
``(subject, content)`` pairs with a category and an importance:

* **health and diet** - allergies ("allergic to penicillin", "shellfish makes
  me sick", "No dairy for me", "I can't eat gluten"), conditions ("I have
  asthma", "20 weeks pregnant"), medication, diets ("I'm vegan now", "doing
  keto"); 我对花生过敏, 我吃素;
* **people and pets** - "My wife's name is Sara", "our dog Rex", "a kitten
  ... named him Biscuit", "the kids named her Clementine" (the referent may be
  in the previous message); 我女儿叫朵朵;
* **identity, home and work** - name, age, birthday, nationality, "I live
  in", "moved here to Calgary", "I work at", "I'm a primary school teacher",
  "As a senior data engineer"; 我住在上海, 我在银行做柜员;
* **how to answer** - answer language ("Please always answer in
  Portuguese"), format ("bullet points please"), length, units, time zone,
  the languages the user speaks; 请用繁体字回复;
* **plans and numbers** - dated events ("My flight to Lisbon is on 3 June at
  6:50"), reschedules ("they've moved the physio to Wednesday"), moves and
  trips, goals, budgets, sizes, car, email, phone;
* **likes and hobbies** - "I hate coriander", "I don't like coffee anymore",
  "bouldering three evenings a week".

What is *not* a fact about the user stays out: questions ("Should I move to
Berlin?"), hypotheticals ("If I were allergic to nuts..."), role-play and
fiction ("Let's role-play: ... I'm Gregor"), sarcasm ("Oh sure, I'm a
billionaire"), quoted text (a speech to proofread, a line of a novel),
other people's facts ("My colleague is allergic to cats") and plans
considered but rejected ("I thought about going vegan but nah"). Hedged
clauses ("I think", "maybe", "was going to") come back marked ``hedged``.

Subjects are the update keys: a later fact with the same subject supersedes
the earlier one (``home_city``, ``diet``, ``work``, ``answer_language``,
``allergy:penicillin``, ``pet:cat``, ``plan:flight``, ``budget:laptop``).
A subject ending in ``:*`` (``budget:*``, ``plan:*``) refers back to the
latest fact under that prefix ("I can go up to 850 now"); the writer
resolves it against core memory.

Example:
    >>> [(f.subject, f.content) for f in find_facts("I'm 34 and just started running.")]
    [('age', '34 years old'), ('hobby:running', 'started running')]
    >>> [(f.subject, f.content) for f in find_facts("Remember that my sister is called Joana.")]
    [('family:sister', 'sister is called Joana')]
    >>> find_facts("If I were allergic to nuts, what would I avoid?")
    []
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass

from langchain_tiered_memory.text import strip_quoted
from langchain_tiered_memory.tiers.core import FactCategory

__all__ = ["FoundFact", "find_facts", "normalise_message"]


@dataclass(frozen=True)
class FoundFact:
    """A fact one clause states about the user.

    Attributes:
        subject: Update key (a later fact with the same subject replaces it).
        content: The fact in plain words, as the user put it.
        category: preference, fact, plan or task_state.
        importance: 1-10 (health and how-to-answer facts highest).
        hedged: Said with doubt ("I think", "maybe", "was going to").
    """

    subject: str
    content: str
    category: FactCategory = "fact"
    importance: float = 5.0
    hedged: bool = False


# --- word lists ----------------------------------------------------------------


_STANDING = re.compile(
    r"\b(?:always|from now on|in future|in the future|going forward|every time|by default|"
    r"prefer|I like|I find|easier for me|for me|with me|answers|replies|responses|all the time|"
    r"whenever)\b",
    re.I,
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PRONOUNS = _words(
    "it that this which he she they them everything something anything stress work life you "
    "people mum mom dad what who there"
)


_LANGUAGES = (
    "english|spanish|portuguese|french|german|italian|dutch|flemish|turkish|polish|russian|"
    "ukrainian|arabic|hebrew|hindi|urdu|bengali|punjabi|tamil|telugu|marathi|gujarati|"
    "japanese|korean|chinese|mandarin|cantonese|vietnamese|thai|indonesian|malay|tagalog|"
    "filipino|swedish|norwegian|danish|finnish|icelandic|greek|czech|slovak|hungarian|"
    "romanian|bulgarian|serbian|croatian|bosnian|slovenian|catalan|basque|galician|welsh|"
    "irish|gaelic|persian|farsi|swahili|afrikaans|latin|esperanto|estonian|latvian|"
    "lithuanian|albanian|armenian|georgian|kurdish|pashto|nepali|sinhala|khmer|lao|burmese|"
    "mongolian|amharic|somali|yoruba|igbo|hausa|zulu|xhosa|maori|hawaiian"
)
_LANG = (
    rf"(?:(?:simplified|traditional|brazilian|european|british|american|mexican|swiss|"
    rf"canadian) )?(?:{_LANGUAGES})"
)
_NATIONALITIES = (
    "british|english|scottish|welsh|irish|american|canadian|australian|french|german|dutch|"
    "belgian|spanish|portuguese|italian|greek|turkish|polish|swedish|norwegian|danish|finnish|"
    "russian|ukrainian|chinese|japanese|korean|indian|pakistani|bangladeshi|brazilian|mexican|"
    "argentinian|argentine|chilean|colombian|peruvian|nigerian|kenyan|ghanaian|south african|"
    "egyptian|moroccan|israeli|iranian|iraqi|lebanese|syrian|vietnamese|thai|filipino|"
    "indonesian|malaysian|singaporean|swiss|austrian|czech|slovak|hungarian|romanian|"
    "bulgarian|serbian|croatian|icelandic|estonian|latvian|lithuanian|new zealander|kiwi|"
    "taiwanese|cuban|jamaican|venezuelan|ethiopian|scandinavian|european|latina|latino"
)
_JOBS = (
    "teacher|nurse|doctor|physician|gp|surgeon|dentist|hygienist|orthodontist|vet|"
    "veterinarian|pharmacist|paramedic|midwife|physio|physiotherapist|therapist|psychologist|"
    "psychiatrist|counsellor|counselor|social worker|carer|caregiver|engineer|developer|"
    "programmer|coder|designer|architect|lawyer|solicitor|barrister|attorney|paralegal|judge|"
    "accountant|bookkeeper|auditor|actuary|consultant|manager|director|executive|analyst|"
    "scientist|researcher|chemist|biologist|physicist|mathematician|statistician|economist|"
    "chef|cook|baker|butcher|barista|waiter|waitress|bartender|sommelier|cashier|"
    "receptionist|secretary|assistant|clerk|teller|administrator|officer|civil servant|"
    "firefighter|police officer|policeman|policewoman|detective|soldier|pilot|"
    "flight attendant|steward|stewardess|driver|courier|mechanic|electrician|plumber|"
    "carpenter|joiner|builder|bricklayer|roofer|painter|decorator|gardener|landscaper|farmer|"
    "fisherman|cleaner|housekeeper|nanny|childminder|tutor|lecturer|professor|librarian|"
    "archivist|curator|journalist|reporter|editor|writer|author|copywriter|translator|"
    "interpreter|illustrator|artist|photographer|filmmaker|animator|musician|composer|"
    "singer|actor|actress|dancer|choreographer|producer|comedian|entrepreneur|founder|"
    "co-founder|ceo|cto|cfo|coo|freelancer|contractor|intern|apprentice|trainee|student|"
    "undergrad|undergraduate|postgrad|phd student|grad student|resident|technician|"
    "specialist|coordinator|planner|recruiter|marketer|salesperson|sales rep|"
    "estate agent|realtor|broker|banker|trader|investor|surveyor|inspector|optician|"
    "optometrist|radiographer|sonographer|dietitian|nutritionist|personal trainer|coach|"
    "instructor|lifeguard|security guard|guard|miner|welder|machinist|tailor|hairdresser|"
    "barber|stylist|beautician|florist|jeweller|jeweler|shopkeeper|retailer|"
    "product owner|scrum master|devops|sysadmin|tester|influencer|youtuber|streamer|"
    "blogger|podcaster|vlogger|pastor|priest|vicar|rabbi|imam|monk|nun|diplomat|"
    "politician|councillor|mayor|ux researcher|data engineer|data scientist|project manager|"
    "product manager|software engineer|web developer|teaching assistant|headteacher|"
    "principal|receptionist|zookeeper|ranger|astronaut|sailor|captain"
)
_RELATIONS = (
    "wife|husband|partner|spouse|boyfriend|girlfriend|fiance|fiancé|fiancée|son|daughter|"
    "sons|daughters|kid|kids|child|children|baby|toddler|twins|twin|boys|girls|mum|mom|mother|dad|"
    "father|parents|brother|sister|siblings|sibling|grandma|grandmother|granny|nan|grandpa|"
    "grandfather|grandad|granddad|grandson|granddaughter|grandkids|grandchildren|aunt|"
    "auntie|uncle|cousin|niece|nephew|stepson|stepdaughter|stepmum|stepmom|stepdad|"
    "stepfather|stepmother|best friend|boss|manager|flatmate|roommate|housemate|"
    "mother-in-law|father-in-law|sister-in-law|brother-in-law|son-in-law|daughter-in-law|"
    "eldest|youngest|little one|little girl|little boy|baby girl|baby boy"
)
_PETS = (
    "dog|dogs|puppy|puppies|pup|cat|cats|kitten|kittens|kitty|rabbit|rabbits|bunny|hamster|"
    "guinea pig|guinea pigs|parrot|budgie|bird|horse|pony|tortoise|turtle|fish|goldfish|"
    "snake|lizard|gecko|ferret|chickens|hens|rat|mouse|pet|pets"
)
_BREEDS = {
    "dog": "beagle|labrador|lab|retriever|golden retriever|poodle|corgi|dachshund|sausage dog|"
    "spaniel|cocker spaniel|springer spaniel|terrier|collie|border collie|husky|pug|bulldog|"
    "french bulldog|frenchie|greyhound|whippet|lurcher|shepherd|german shepherd|alsatian|"
    "schnauzer|chihuahua|rottweiler|doberman|sheepdog|pointer|setter|mastiff|shih tzu|"
    "cavapoo|cockapoo|labradoodle|goldendoodle|maltese|pomeranian|boxer|great dane|"
    "staffie|staffy|jack russell|weimaraner|vizsla|akita|shiba|samoyed|malamute|basset|"
    "bloodhound|dalmatian|newfoundland|bernese|cavalier",
    "cat": "siamese|persian|maine coon|ragdoll|bengal|sphynx|tabby|british shorthair|"
    "burmese|abyssinian|moggy|tomcat",
}
_BREED_TO_SPECIES = {b: s for s, names in _BREEDS.items() for b in names.split("|")}
_ANIMAL = rf"(?:{_BREEDS['dog']}|{_BREEDS['cat']}|{_PETS})"
_KIN = rf"(?:{_RELATIONS}|{_ANIMAL})"
_SPECIES = {
    "dogs": "dog",
    "puppy": "dog",
    "puppies": "dog",
    "pup": "dog",
    "cats": "cat",
    "kitten": "cat",
    "kittens": "cat",
    "kitty": "cat",
    "bunny": "rabbit",
    "rabbits": "rabbit",
    "guinea pigs": "guinea pig",
    "hens": "chickens",
}
_CONDITIONS = (
    "asthma|diabetes|type 1 diabetes|type 2 diabetes|type one diabetes|type two diabetes|"
    "epilepsy|arthritis|rheumatoid arthritis|eczema|psoriasis|migraines|migraine|ibs|"
    "crohn's|crohns|colitis|coeliac disease|celiac disease|coeliac|celiac|hypertension|"
    "high blood pressure|low blood pressure|high cholesterol|adhd|add|autism|anxiety|"
    "depression|insomnia|tinnitus|sleep apnoea|sleep apnea|gout|lupus|endometriosis|pcos|"
    "anaemia|anemia|hypothyroidism|hyperthyroidism|an underactive thyroid|"
    "an overactive thyroid|a heart condition|a heart murmur|a pacemaker|a bad back|"
    "bad knees|a bad knee|back pain|chronic pain|fibromyalgia|multiple sclerosis|ms|"
    "parkinson's|cancer|long covid|hay fever|glaucoma|osteoporosis|scoliosis|a hernia|"
    "kidney disease|gerd|acid reflux|reflux|vertigo|chronic fatigue|me/cfs|dyslexia|"
    "dyspraxia|ocd|ptsd|bipolar disorder|bipolar|a stoma|a peanut allergy"
)
_STATES = (
    "coeliac|celiac|diabetic|pre-diabetic|prediabetic|epileptic|asthmatic|anaemic|anemic|"
    "immunocompromised|colou?r-?blind|deaf|partially sighted|hard of hearing|autistic|"
    "dyslexic|pregnant|breastfeeding|vegan|vegetarian"
)
_MEDS = (
    r"insulin|metformin|statins?|warfarin|the pill|antidepressants|beta[- ]blockers|"
    r"blood thinners|hrt|an inhaler|inhalers|antihistamines|steroids|iron tablets|"
    r"[a-z]+(?:ine|pril|sartan|statin|mab|xetine|azole|cillin|mycin|pine|done|zepam|zolam|"
    r"olol|prazole|thyroxine|formin|parin|tide|triptan|profen|fenac|amine|oxacin|cycline)"
)
_DIETS = (
    "vegan|vegetarian|veggie|pescatarian|pescetarian|flexitarian|plant-based|plant based|"
    "keto|paleo|halal|kosher|teetotal|teetotaller|teetotaler|sober|fruitarian|raw vegan|"
    "gluten-free|gluten free|dairy-free|dairy free|low-carb|low carb|carnivore"
)
_EVENTS = (
    "flight|flights|trip|holiday|vacation|wedding|appointment|interview|exam|exams|test|"
    "deadline|party|meeting|surgery|operation|procedure|concert|gig|match|game|race|"
    "marathon|half marathon|triathlon|conference|presentation|due date|check-up|checkup|"
    "physio|scan|ultrasound|class|course|lesson|shift|start date|first day|train|ferry|"
    "recital|graduation|anniversary|visit|reunion|hearing|court date|date night|show|"
    "performance|audition|viva|defence|defense|move|housewarming|christening|funeral|"
    "retreat|training|workshop|webinar|session|consultation|booking|reservation|tour|"
    "cruise|road trip|festival|competition|tournament|ceremony|launch|review|appraisal|"
    "root canal|filling|smear test|mri|x-ray|blood test|vaccination|jab|booster|haircut|"
    "massage|driving test|mot|c-section|induction|deposition|handover|exhibition|"
    "premiere|dinner reservation|drinks|lunch|dinner|brunch"
)
_GENERIC_EVENTS = _words(
    "appointment check-up checkup visit session consultation booking reservation class "
    "lesson course test scan review "
)
_HOBBIES = (
    "running|jogging|swimming|cycling|biking|mountain biking|climbing|rock climbing|bouldering|"
    "hiking|trail running|yoga|pilates|rowing|boxing|kickboxing|dancing|salsa|ballet|"
    "skiing|snowboarding|surfing|kitesurfing|windsurfing|skating|ice skating|skateboarding|"
    "gardening|baking|knitting|crochet|crocheting|sewing|quilting|painting|drawing|"
    "sketching|photography|chess|tennis|table tennis|football|soccer|golf|basketball|"
    "volleyball|badminton|squash|padel|rugby|cricket|hockey|baseball|softball|netball|"
    "martial arts|karate|judo|jiu-jitsu|jiu jitsu|bjj|taekwondo|kung fu|tai chi|crossfit|"
    "weightlifting|lifting|powerlifting|bodybuilding|spinning|triathlons|marathons|"
    "fishing|sailing|kayaking|canoeing|paddleboarding|archery|fencing|gaming|"
    "video games|board games|piano|guitar|bass guitar|bass|violin|viola|cello|drums|"
    "ukulele|saxophone|sax|flute|clarinet|trumpet|trombone|harp|singing|choir|pottery|"
    "ceramics|woodworking|birdwatching|birding|meditation|parkour|horse riding|"
    "horseback riding|riding|diving|scuba diving|snorkelling|snorkeling|orienteering|"
    "geocaching|calligraphy|origami|embroidery|beekeeping|the gym|gym|zumba|aerobics|"
    "water polo|handball|lacrosse|ultimate frisbee|frisbee|darts|snooker|pool|bowling|"
    "mahjong|bridge|poker|sudoku|crosswords|astronomy|stargazing|camping|backpacking|"
    "mountaineering|caving|open water swimming|wild swimming|parkrun|triathlon"
)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|tue|tues|thu|thur|thurs|fri"
_DATE = (
    rf"(?:\b\d{{1,2}}(?:st|nd|rd|th)?(?: of)? (?:{_MONTHS})\b|\b(?:{_MONTHS}) \d{{1,2}}"
    rf"(?:st|nd|rd|th)?\b|\b\d{{1,2}}[:.]\d{{2}}\s*(?:am|pm|a\.m\.|p\.m\.)?|\b\d{{1,2}}\s*"
    rf"(?:am|pm|a\.m\.|p\.m\.)(?!\w)|\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b|\b\d{{4}}-\d{{2}}-"
    rf"\d{{2}}\b|\b(?:on |this |next |last )?(?:{_WEEKDAYS})\b(?: (?:morning|afternoon|evening|"
    rf"night))?|\btomorrow\b|\btonight\b|\bnext (?:week|month|year|weekend|spring|summer|"
    rf"autumn|fall|winter)\b|\bthis (?:week|weekend|month|year|spring|summer|autumn|fall|"
    rf"winter)\b|\bthe \d{{1,2}}(?:st|nd|rd|th)\b(?: of (?:{_MONTHS})\b)?|\bin (?:a |one |two |"
    rf"three |four |five |six "
    rf"|a few |\d+ )(?:days?|weeks?|"
    rf"months?|years?)\b|\b(?:in|by|since|until|till|from|end of|early|late|mid)[ -]"
    rf"(?:{_MONTHS})\b|\bnoon\b|\bmidnight\b)"
)
_AMOUNT = (
    r"(?:[$€£¥]\s?\d[\d,.]*\s?[kK]?\b|\b\d[\d,.]*\s?[kK]?(?:\s?(?:euros?|eur|dollars?|usd|"
    r"pounds?|quid|gbp|bucks|yuan|rmb|yen|francs?|chf|kr|sek|nok|dkk|grand))?\b)"
)
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_PHONE = r"(?<![\w+])\+?\d[\d ()-]{6,}\d(?!\w)"
_NAME_STOP = set(
    _words(
        "i im me and or but the a an is was are has had who that this he she they it we you "
        "just also still again now then so lol btw ok "
    )
)
_NAME_STOP.update(_WEEKDAYS.split("|"))

# Chinese
_ZH_LANG = (
    "繁体字|繁体中文|繁体|简体字|简体中文|简体|英文|英语|中文|汉语|普通话|粤语|日语|日文|"
    "韩语|韩文|法语|法文|德语|德文|西班牙语|葡萄牙语|俄语|意大利语|阿拉伯语|泰语|越南语"
)
_ZH_REL = (
    "老婆|老公|妻子|丈夫|太太|先生|爱人|对象|男朋友|女朋友|男友|女友|未婚夫|未婚妻|儿子|女儿|"
    "孩子|宝宝|大宝|二宝|闺女|妈妈|爸爸|母亲|父亲|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|"
    "姥姥|姥爷"
)
_ZH_OTHERS = (
    r"(?:同事|朋友|同学|室友|邻居|老板|领导|客户|他|她|它|他们|她们|别人|家人|"
    + "老婆|老公|妻子|丈夫|太太|先生|爱人|男朋友|女朋友|儿子|女儿|孩子|宝宝|妈妈|爸爸|哥哥|姐姐|"
    + "弟弟|妹妹|爷爷|奶奶)"
)
_ZH_PET = (
    "狗狗|小狗|狗|猫咪|小猫|猫|兔子|仓鼠|鹦鹉|乌龟|金鱼|柯基|泰迪|金毛|哈士奇|柴犬|拉布拉多|"
    "边牧|比熊|博美|萨摩耶|英短|美短|布偶|橘猫|狸花猫"
)
_ZH_JOBS = (
    "老师|教师|医生|护士|律师|会计|工程师|程序员|设计师|产品经理|项目经理|经理|学生|研究生|"
    "博士生|大学生|销售|记者|编辑|厨师|司机|警察|公务员|运营|柜员|作家|画家|演员|歌手|"
    "摄影师|建筑师|药剂师|翻译|咨询师|分析师|研究员|科学家|教授|自由职业者|创业者|店主|"
    "农民|工人|快递员|外卖员|保安|主播|博主|飞行员|空姐|空乘|军人|消防员|牙医|兽医|"
    "心理咨询师|会计师|审计师|客服|前台|秘书|助理|实习生|产品|开发|测试|数据分析师"
)
_ZH_EVENTS = (
    "航班|飞机|火车|高铁|动车|面试|考试|婚礼|会议|预约|门诊|复查|体检|手术|聚会|旅行|出差|"
    "约会|演出|比赛|签证|讲座|课|培训|年会|答辩|搬家"
)
_ZH_NUM = "[0-9一二三四五六七八九十两]"
_ZH_TIME = (
    rf"(?:{_ZH_NUM}+点(?:{_ZH_NUM}+分?|半|一刻|钟)?|\d{{1,2}}[:：]\d{{2}}|(?:下|这|本|上)?"
    rf"(?:个)?(?:周|星期|礼拜)[一二三四五六日天]|{_ZH_NUM}+月{_ZH_NUM}+[日号]|明天|后天|今晚|"
    rf"今天|下周|下个月|月底|月初|周末)"
)

# --- normalising and splitting ---------------------------------------------------

_INFORMAL = (
    (re.compile(r"\bi\b(?![.'])"), "I"),
    (re.compile(r"\bi'm\b|\bim\b|\bIm\b"), "I'm"),
    (re.compile(r"\bi've\b|\bive\b"), "I've"),
    (re.compile(r"\bi'd\b"), "I'd"),
    (re.compile(r"\bi'll\b"), "I'll"),
    (re.compile(r"\bdont\b"), "don't"),
    (re.compile(r"\bdoesnt\b"), "doesn't"),
    (re.compile(r"\bcant\b"), "can't"),
    (re.compile(r"\bisnt\b"), "isn't"),
    (re.compile(r"\bdidnt\b"), "didn't"),
    (re.compile(r"\bwhats\b"), "what's"),
)
_STRAIGHT = str.maketrans("’‘“”\u00a0", "''\"\" ")
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f]+")


def normalise_message(text: str) -> str:
    """``text`` unescaped (``&quot;`` -> ``"``), with straight quotes, one space
    between words and common informal spellings fixed (``im`` -> ``I'm``).

    Example:
        >>> normalise_message("im vegan &amp; i love &quot;spicy&quot; food")
        'I\\'m vegan & I love "spicy" food'
    """
    for _ in range(3):  # doubly escaped text too
        unescaped = html.unescape(text)
        if unescaped == text:
            break
        text = unescaped
    text = text.translate(_STRAIGHT)
    text = re.sub(r"[ \t]+", " ", text).strip()
    for pattern, replacement in _INFORMAL:
        text = pattern.sub(replacement, text)
    return text


_FRAME = re.compile(
    r"\bimagine (?:you(?:'re| are)|I(?:'m| am))\b|\bact as (?:a|an|my|if|though)\b|"
    r"\byou are (?:a|an|my) (?:[\w-]+ ){0,3}(?:assistant|expert|writer|consultant|coach|"
    r"teacher|tutor|character|bot)\b|\b(?:let'?s |we could )?role[- ]?play|\bpretend (?:that |"
    r"to be |you|I|we)|"
    r"\blet'?s pretend\b|\bplay a game where\b|\bin character\b|\bact as (?:if|though)\b|"
    r"\bmy character\b|\bthe (?:narrator|protagonist|main character|hero|heroine)\b|"
    r"\bin my (?:novel|story|book|script|screenplay|game|campaign)\b|角色扮演|假装|扮演",
    re.I,
)
_SARCASM = re.compile(
    r"^(?:oh,? )?(?:sure|yeah,? right|right),|\byeah,? right\b|\bas if\b|\bjust kidding\b|"
    r"\bjk\b|\bkidding\b|/s\b|开玩笑",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+|\s*" + _EMOJI.pattern + r"\s*")
_CLAUSE_BREAK = re.compile(
    r"\s*[;；]\s*|\s+[-–—]+\s+|\s*—\s*|,?\s+but\s+|,\s*so\s+|\s+so\s+(?=I\b|we\b|my\b|our\b)|"
    r",?\s+because\s+|,?\s+though\s+|,?\s+although\s+|,?\s+whereas\s+|,\s*anyway\b|"
    r"(?<=[\u4e00-\u9fff])[，,]\s*|，|(?:\s*\(\s*|\s*\)\s*)(?=[^)]*$)",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|but|also|anyway|now|well|hey|hi|quick question|first "
    r"(?:question|thing)|one more thing|question),?:?\s+)*(?:what|what's|whats|when|where|"
    r"which|who|whom|whose|why|how|do|does|did|is|are|was|were|am|isn't|aren't|can(?!'t)|"
    r"could|should|shall|would|will|may|might|have|has|had|any)\b",
    re.I,
)
_POLITE_REQUEST = re.compile(
    r"^(?:please,? )?(?:can|could|would|will) you (?:please )?(?:always |only |just |now )?"
    r"(?:reply|respond|answer|write|speak|talk|use|keep|stick|switch|stop|remember|note|format|"
    r"give me (?:your |the )?(?:answers|replies|responses))\b",
    re.I,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:(?:even )?if|unless) (?:I|I'm|I'd|I've|I was|I were|we|we're|we'd|my|our)\b|"
    r"^(?:if|unless)\b|\b(?:suppose|supposing|imagine|imagining|hypothetically|what if|"
    r"in theory|let's say|assuming|wish|were I)\b|\bI(?:'d| would) (?:be|have|live|move|go|"
    r"get|need|probably|definitely)\b|如果|假如|假设|要是|万一|想象",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:maybe|might|perhaps|probably|possibly|not sure|i think|i guess|i suppose|"
    r"thought about|thinking about|thinking of|considered|considering|toying with|"
    r"was going to|were going to|wanted to|planned to|was planning to|were planning to|"
    r"hoping to|hope to|wondering|almost|nearly|decided against|changed my mind)\b|"
    r"也许|可能|大概|或许|本来想|原本想|想过|考虑过|算了|打算",
    re.I,
)
_DESIRE = re.compile(
    r"\b(?:want to|wanna|would love to|'d love to|would like to|'d like to|dream of|dreaming of|"
    r"someday|one day|aspire to|hope to|hoping to)\b|想要|希望|梦想",
    re.I,
)
_REJECTED = re.compile(r"\b(?:nah|decided against|changed my mind|fell through)\b|算了", re.I)
_ZH_QUESTION = re.compile(
    r"[吗呢]$|什么|怎么|哪|多少|为什么|是否|要不要|可不可以|能不能|有没有|几点|几个|几天"
)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _clauses(sentence: str) -> list[str]:
    pieces = [p.strip(" ,") for p in _CLAUSE_BREAK.split(sentence) if p and p.strip(" ,")]
    if sentence.rstrip().endswith(("?", "？")):
        # "I'm allergic to peanuts, is satay ok?": keep the statement, drop the question
        split = [q.strip() for p in pieces for q in re.split(r",\s+", p) if q.strip()]
        return split
    return pieces


def _is_question(clause: str) -> bool:
    if _POLITE_REQUEST.search(clause):
        return False
    stripped = clause.rstrip(" .!")
    if stripped.endswith(("?", "？")):
        return True
    if re.search(r"[\u4e00-\u9fff]", clause) and _ZH_QUESTION.search(stripped):
        return True
    return bool(_QUESTION_START.search(clause))


# --- small helpers -------------------------------------------------------------------

_TAIL = re.compile(
    r"\s*[,.;:!?()\[\]]|\s+(?:for|with|since|because|after|before|when|while|which|where|"
    r"who|that|so|but|or|though|although|until|as|if|then|plus|btw|lol|haha|tbh|honestly|"
    r"has|have|is|are|was|were|means|makes|gets|feels|can|will|keeps|"
    r"anyway|though|like|from now on|these days|at the moment|currently|lately|recently|"
    r"already|too|as well|now|again|anymore|any more|either|at all|right now|every|each|"
    r"way too much|so much|a lot|very much|and I|and we|and my|and the|and it|and then|"
    r"over the|in the (?:summer|spring|autumn|winter|morning|evening)|"
    rf"(?:in|on|at|by|from|over) (?:the )?(?:\d+(?:st|nd|rd|th)?|(?:{_MONTHS})\b|"
    rf"(?:{_WEEKDAYS})\b)|"
    r"(?:last|next|this|a few|a couple of) (?:year|month|week|weekend|day|summer|spring|"
    r"autumn|winter|night|time)s?)\b",
    re.I,
)
_TAIL_AND = re.compile(r"\s+and\s+", re.I)
_LEAD = re.compile(r"^(?:the|a|an|my|our|some|any|really|very|so|just)\s+", re.I)


def _cut(text: str, *, allow_and: bool = False) -> str:
    """``text`` up to where the object ends (a comma, a conjunction, a time phrase)."""
    match = _TAIL.search(text)
    if match:
        text = text[: match.start()]
    if not allow_and:
        match = _TAIL_AND.search(text)
        if match:
            text = text[: match.start()]
    return text.strip(" '\"-–—")


def _key(text: str) -> str:
    """A short, stable update key ("window seats on long flights" -> "window seats")."""
    text = re.split(
        r"\s+(?:on|in|at|for|with|during|when|from|to|of|about|after|before)\s+",
        text.lower(),
        maxsplit=1,
    )[0]
    words = re.sub(r"[^\w\s'-]", " ", text).split()
    drop = {"the", "a", "an", "my", "our", "some", "any", "really", "very", "so", "much"}
    words = [w for w in words if w not in drop]
    return " ".join(words[:3])


def _obj(text: str, *, allow_and: bool = False) -> str:
    text = _cut(text, allow_and=allow_and)
    while True:
        stripped = _LEAD.sub("", text)
        if stripped == text:
            return text
        text = stripped


def _names(text: str) -> list[str]:
    """Capitalised names at the start of ``text`` ("Milo and Astrid, start ..." -> both)."""
    found: list[str] = []
    for part in re.split(r",\s*|\s+and\s+|\s*&\s*", text):
        match = re.match(r"([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)", part.strip())
        if not match or match.group(1).lower() in _NAME_STOP:
            break
        found.append(match.group(1))
        if not re.fullmatch(r"[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?", part.strip()):
            break
    return found


def _species(noun: str) -> str:
    noun = noun.lower()
    return _BREED_TO_SPECIES.get(noun) or _SPECIES.get(noun, noun)


def _kin_subject(noun: str) -> str:
    noun = noun.lower()
    animal = re.fullmatch(_ANIMAL, noun)
    return f"pet:{_species(noun)}" if animal else f"family:{noun}"


_REFERENT = re.compile(
    rf"\b(?:my|our|the|a|an|his|her|their)\s+(?:[\w-]+\s+)?({_KIN})\b|({_ZH_REL}|{_ZH_PET})",
    re.I,
)


def _referent(*texts: str) -> str | None:
    """The last person or animal mentioned in ``texts`` (searched last text first)."""
    for text in texts:
        found = [m.group(1) or m.group(2) for m in _REFERENT.finditer(text)]
        if found:
            return found[-1]
    return None


# --- the rules -----------------------------------------------------------------------

Builder = Callable[[re.Match[str], str], "list[tuple[str, str]] | tuple[str, str] | None"]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    build: Builder
    category: FactCategory = "fact"
    importance: float = 5.0
    fallback: bool = False  # only when no other rule matched the clause
    request: bool = False  # how to answer: "I'd like replies in Spanish" is not a wish


def _rule(
    pattern: str,
    build: Builder,
    category: FactCategory = "fact",
    importance: float = 5.0,
    *,
    flags: int = re.I,
    fallback: bool = False,
    request: bool = False,
) -> _Rule:
    return _Rule(re.compile(pattern, flags), build, category, importance, fallback, request)


def _object_fact(subject: str, template: str, *, group: str = "x") -> Builder:
    """A builder for ``(subject, template with the object)``, or nothing without an object.

    The object is ``group`` of the match cut where it ends (:func:`_obj`).
    """

    def build(match: re.Match[str], _said: str) -> tuple[str, str] | None:
        obj = _obj(match.group(group))
        return (subject, template.format(obj)) if obj else None

    return build


_I_AM = r"\bI(?:'m| am)"
_I_HAVE = r"\bI(?:'ve| have)"
_ADVERB = (
    r"(?:(?:now|currently|still|also|actually|already|just|recently|finally|fully|"
    r"completely|totally|strictly|mostly|basically|officially|really|very|severely|highly|"
    r"seriously|deathly|quite|mildly|slightly|a bit|kind of|kinda|pretty|so) )*"
)


def _allergies(m: re.Match[str], _: str) -> list[tuple[str, str]]:
    negated = m.group("neg")
    items = [
        i
        for i in re.split(r",\s*|\s+and\s+|\s+or\s+|\s*&\s*", _obj(m.group("x"), allow_and=True))
        if i
    ]
    prefix = f"{negated.strip()} allergic to" if negated else "allergic to"
    return [(f"allergy:{_key(_obj(i))}", f"{prefix} {_obj(i)}") for i in items if _obj(i)]


def _job(m: re.Match[str], _: str) -> tuple[str, str] | None:
    role = _obj(m.group("job"))
    org = m.group("org") if "org" in m.re.groupindex else None
    place = f" at {_cut(org)}" if org and _cut(org) else ""
    return ("work", f"{role}{place}") if role else None


_EVENT_MODIFIERS = _words("new next first big upcoming little annual usual own final ")


def _plan(m: re.Match[str], clause: str) -> tuple[str, str] | None:
    after = re.search(_DATE, clause[m.end() :], re.I)
    if after:
        # "The dental surgery called and moved my check-up to Thursday": the check-up
        if re.search(rf"\b(?:{_EVENTS})\b", clause[m.end() : m.end() + after.start()], re.I):
            return None
    elif not re.search(_DATE, clause[: m.start()], re.I):
        return None
    head = m.group("event").lower()
    modifiers = [w for w in (m.group("mod") or "").lower().split() if w not in _EVENT_MODIFIERS]
    key = head
    if head in _GENERIC_EVENTS and modifiers:
        key = modifiers[-1].removesuffix("'s")
    # the comma-separated pieces from the event to its date ("Reply in Spanish please,
    # I have a B2 exam in May" -> "I have a B2 exam in May")
    pieces = re.split(r"(?<=,)\s+", clause)
    spans, offset = [], 0
    for piece in pieces:
        spans.append((offset, offset + len(piece), piece))
        offset += len(piece) + 1
    first = next((i for i, (a, b, _) in enumerate(spans) if a <= m.start() < b + 1), 0)
    last = max((i for i, (_, _, p) in enumerate(spans) if re.search(_DATE, p, re.I)), default=first)
    clause = " ".join(p for _, _, p in spans[min(first, last) : max(first, last) + 1])
    clause = re.sub(r",$", "", clause.strip())
    content = re.sub(
        r"^(?:scratch that|update|quick update|actually|ok|okay|so|also|btw|oh|and|fyi|"
        r"just so you know|heads up)[,:!]?\s+",
        "",
        clause,
        flags=re.I,
    )
    content = re.sub(r"\s+(?:so|and) I(?:'ll|'m| will| am)\b.*$", "", content)
    return f"plan:{key}", content.rstrip(" .!")


def _zh_plan(m: re.Match[str], clause: str) -> tuple[str, str] | None:
    return f"plan:{m.group('event')}", clause


def _budget(thing: str | None, amount: str) -> tuple[str, str]:
    amount = amount.strip()
    if thing:
        key = _key(re.sub(r"\b(?:new|next|first|second-hand|used)\b", "", thing))
        key = key.split()[-1] if key else ""
        if key:
            return f"budget:{key}", f"budget for {_obj(thing)}: {amount}"
    return "budget:*", f"budget: {amount}"


def _speaks(m: re.Match[str], _: str) -> list[tuple[str, str]]:
    listed = m.group("langs").strip(" ,")
    out = []
    for part in re.split(r",\s*|\s+and\s+|\s*&\s*", listed):
        lang = re.search(_LANG, part, re.I)
        if lang:
            out.append((f"speaks:{lang.group(0).lower()}", f"speaks {part.strip()}"))
    return out


def _likes(m: re.Match[str], clause: str) -> tuple[str, str] | None:
    thing = _obj(m.group("x"))
    if not thing or thing.lower() in {"it", "that", "this", "them", "you", "him", "her"}:
        return None
    verb = m.group("verb").lower()
    negative = bool(m.groupdict().get("neg"))
    if negative:
        no_longer = re.search(r"\bno longer\b|\bany ?more\b|\bnot .* now\b", clause, re.I)
        content = f"no longer likes {thing}" if no_longer else f"dislikes {thing}"
    else:
        content = f"{verb}s {thing}" if not verb.endswith("s") else f"{verb} {thing}"
    return f"likes:{_key(thing)}", content


def _kin_named(m: re.Match[str], _: str) -> list[tuple[str, str]] | None:
    noun = m.group("kin")
    names = _names(m.group("name"))
    if not names:
        return None
    return [(_kin_subject(noun), _called(noun, names))]


_OTHER_OWNER = re.compile(
    rf"\b(?:(?i:(?:my|our|his|her|their|a) (?:[\w-]+ )?(?:neighbou?rs?|friends?|colleagues?|"
    rf"coworkers?|boss|{_RELATIONS})|he|she|they)|(?!(?:I|We|You)\b)[A-Z][a-z]+)\s+"
    r"(?i:has|had|have|got|adopted|owns|bought|keeps)\b[^.]*$"
)


def _someone_else(before: str) -> bool:
    """ "My neighbour has a parrot called Kiwi": the parrot is not the user's."""
    return bool(_OTHER_OWNER.search(before)) and not re.search(
        r"\b(?:I|we)(?:'ve| have|'d)?\s+(?:got|have|adopted|bought|own|rescued)\b[^.]*$",
        before,
        re.I,
    )


def _called(noun: str, names: list[str]) -> str:
    """ "twins are called Milo and Astrid"."""
    plural = len(names) > 1 or (noun.lower().endswith("s") and noun.lower() not in {"boss"})
    return f"{noun.lower()} {'are' if plural else 'is'} called {' and '.join(names)}"


def _age(m: re.Match[str], _: str) -> tuple[str, str]:
    return "age", f"{m.group('age')} years old"


def _usual(m: re.Match[str], _: str) -> tuple[str, str] | None:
    thing = _obj(m.group("x"))
    what = (m.groupdict().get("what") or "").strip().lower()
    if not thing:
        return None
    label = m.group("label").lower()
    return (
        f"favourite:{what}" if what else "usual"
    ), f"{label}{' ' + what if what else ''}: {thing}"


_EN_RULES: list[_Rule] = [
    # -- health and diet (highest importance) --
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been|\bwe're|\bwe are|^)\s*{_ADVERB}(?P<neg>not |no longer )?"
        rf"allergic to (?P<x>.+)",
        _allergies,
        importance=9.0,
    ),
    _rule(
        rf"(?:{_I_HAVE}(?: got)?|\bI've got|\bI got|^)\s*(?:a |an )?"
        r"(?:severe |serious |bad |mild )?(?P<x>[\w -]{2,25}?) allerg(?:y|ies)\b",
        lambda m, _: (
            (f"allergy:{_key(_obj(m.group('x')))}", f"allergic to {_obj(m.group('x'))}")
            if _obj(m.group("x")).lower() not in {"an", "a", "no", "any", "the"}
            else None
        ),
        importance=9.0,
    ),
    _rule(
        rf"{_I_AM} {_ADVERB}(?:(?P<x>lactose|gluten|fructose|histamine|wheat|dairy|egg|soy|"
        r"caffeine|alcohol|sulphite|sulfite|fodmap)[- ]intolerant|intolerant to (?P<y>.+))",
        lambda m, _: (
            f"intolerance:{_key(_obj(m.group('x') or m.group('y')))}",
            f"{_obj(m.group('x'))} intolerant"
            if m.group("x")
            else f"intolerant to {_obj(m.group('y'))}",
        ),
        importance=9.0,
    ),
    _rule(
        rf"(?:\bI |^){_ADVERB}(?:can't|cannot|can not|can no longer|shouldn't|mustn't|must not)"
        r" (?:eat|have|drink|tolerate|digest|touch|handle) (?:any )?(?P<x>.+)",
        lambda m, _: (
            (f"avoids:{_key(_obj(m.group('x')))}", f"can't have {_obj(m.group('x'))}")
            if _obj(m.group("x"))
            else None
        ),
        importance=9.0,
    ),
    _rule(
        rf"\bI {_ADVERB}(?:don't|do not|never|no longer|avoid|stay away from|gave up|'ve given up|"
        r"have given up|cut out|'ve cut out) (?:eat |drink |eating |drinking )?(?P<x>(?:red )?meat|"
        r"pork|beef|lamb|chicken|fish|seafood|shellfish|dairy|milk|cheese|eggs|gluten|wheat|"
        r"sugar|alcohol|booze|caffeine|coffee|nuts|peanuts|soy|onions?|garlic|spicy food|"
        r"processed food|carbs|bread|fried food|mushrooms|tomatoes)\b",
        lambda m, _: (f"avoids:{_key(m.group('x'))}", f"avoids {m.group('x').lower()}"),
        importance=8.5,
    ),
    _rule(
        r"(?:^|\b(?:and|but|so|also)\s+)no (?P<x>[\w -]{2,25}?) for me\b",
        lambda m, _: (f"avoids:{_key(m.group('x'))}", f"no {m.group('x')}"),
        importance=8.5,
    ),
    _rule(
        r"(?:^|[,:]\s*|\b(?:and|but|because|since|so|honestly|apparently)\s+)(?P<x>(?:[\w-]+\s+)"
        r"{0,2}[\w-]+?) (?:always |really |just |instantly |immediately )?(?:makes|make|gives|give|"
        r"sends|send|puts|put|lands|land|leaves|leave) me (?:really |so |very |straight )?(?:sick|"
        r"ill|nauseous|queasy|bloated|break out|come out in hives|hives|a rash|migraines?|"
        r"a migraine|headaches?|a headache|itchy|wheezy|unwell|throw up|(?:to|in|into) (?:the )?"
        r"(?:hospital|a&e|er|emergency room|emergency))\b|"
        r"(?:^|[,:]\s*)(?P<y>(?:[\w-]+\s+){0,2}[\w-]+?) (?:wrecks|upsets|destroys|kills|messes "
        r"up|doesn't agree with|does not agree with|don't agree with|disagrees with) (?:my "
        r"(?:stomach|gut|tummy|skin|digestion)|me)\b",
        lambda m, _: (
            (
                f"avoids:{_key(_food(m.group('x') or m.group('y')))}",
                f"{_food(m.group('x') or m.group('y'))} makes them unwell",
            )
            if (m.group("x") or m.group("y")).lower().split()[-1]
            not in {
                "it",
                "that",
                "this",
                "which",
                "he",
                "she",
                "they",
                "everything",
                "something",
                "stress",
                "work",
                "life",
                "you",
                "people",
                "mum",
                "mom",
                "dad",
            }
            else None
        ),
        importance=9.0,
    ),
    _rule(
        rf"{_I_AM} {_ADVERB}(?:(?P<weeks>\d+|one|two|three|four|five|six|seven|eight|nine) "
        r"(?:weeks?|months?) )?pregnant\b",
        lambda m, _: (
            "health:pregnancy",
            f"{m.group('weeks')} {'weeks' if 'week' in m.group(0) else 'months'} pregnant"
            if m.group("weeks")
            else "pregnant",
        ),
        importance=9.0,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been) {_ADVERB}(?:a |an )?(?P<x>{_STATES})\b",
        lambda m, _: (
            None
            if m.group("x").lower() in {"vegan", "vegetarian", "pregnant"}
            else (f"health:{m.group('x').lower()}", m.group("x").lower())
        ),
        importance=9.0,
    ),
    _rule(
        rf"(?:{_I_HAVE}(?: got)?|\bI've got|\bI (?:suffer from|live with|was diagnosed with|got "
        rf"diagnosed with|have had)|{_I_HAVE} (?:been diagnosed with|had)|^(?:diagnosed with))"
        rf" {_ADVERB}(?:(?:mild|severe|bad|chronic|really bad|terrible|seasonal|diagnosed) )*"
        rf"(?P<x>{_CONDITIONS})\b",
        lambda m, _: (f"health:{_key(m.group('x'))}", f"has {m.group('x').lower()}"),
        importance=9.0,
    ),
    _rule(
        r"\bI(?:'m| am)? (?:take|taking|'m on|am on|use|using) (?P<x>(?!the\b|a\b|an\b|my\b|"
        r"some\b|it\b|care\b|time\b|part\b|turns\b|notes\b|photos\b|pictures\b|the bus\b|"
        r"a break\b|breaks\b|walks\b|lessons\b)[A-Za-z][\w-]+(?-i: [A-Z0-9][\w-]*)?)"
        r"(?=[^.?!]*\b(?:\d+ ?(?:mg|mcg|µg|ml)|pills?|tablets?|capsules?|dose|medication|meds|"
        r"prescri\w+|every (?:morning|day|night|evening)|daily|twice a day|once a day|at night))",
        lambda m, c: (
            f"medication:{m.group('x').lower()}",
            "takes " + _cut(c[m.start("x") :], allow_and=False).strip(),
        ),
        importance=9.0,
    ),
    _rule(
        r"\bmy (?:doctor|gp|psychiatrist|consultant|specialist) (?:has )?(?:put|started) me on "
        r"(?P<x>[\w-]+)",
        lambda m, _: (f"medication:{m.group('x').lower()}", f"takes {m.group('x')}"),
        importance=9.0,
    ),
    _rule(
        rf"(?:{_I_AM}|\bwe're|\bwe are) {_ADVERB}(?:a |an )?(?:strict |full |fully )?"
        rf"(?P<x>{_DIETS})\b(?! (?:recipe|option|dish|restaurant|place|food|friend|menu))",
        lambda m, _: ("diet", m.group("x").lower()),
        importance=8.5,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been|\bI(?:'ll be| will be)?) {_ADVERB}(?:doing|on|following|"
        r"trying|eating|sticking to) (?:a |the )?(?P<x>(?:(?:[\w-]+)\s+){0,2}?(?:diet|keto|paleo|"
        r"whole30|intermittent fasting|fasting|low[- ]carb|low[- ]fat|low[- ]fodmap|fodmap|"
        r"carnivore|plant-based diet))\b",
        lambda m, _: ("diet", _obj(m.group("x"))),
        importance=8.5,
    ),
    _rule(
        rf"(?:{_I_HAVE}|\bI|^)\s*{_ADVERB}(?:gone|went|switched to|turned|become|became|go) "
        rf"{_ADVERB}(?:back to )?(?:a |being )?(?P<x>{_DIETS})\b",
        lambda m, _: ("diet", m.group("x").lower()),
        importance=8.5,
    ),
    _rule(
        r"(?:^|[,:]\s*|\b(?:and|but|honestly|apparently)\s+)(?P<x>(?:[\w-]+\s+){0,2}[\w-]+?) and I "
        r"(?:really )?(?:don't|do not|never) (?:get along|agree)|(?:^|[,:]\s*)(?P<y>(?:[\w-]+\s+)"
        r"{0,2}[\w-]+?) (?:is|are) (?:a no-go|off the menu|off-limits|off limits|a no-no|"
        r"a (?:hard |big )?no|not for me|out) for me\b|(?:^|[,:]\s*)(?P<z>(?:[\w-]+\s+){0,2}"
        r"[\w-]+?) (?:is|are) not for me\b",
        lambda m, _: (
            (
                f"avoids:{_key(m.group('x') or m.group('y') or m.group('z'))}",
                f"avoids {(m.group('x') or m.group('y') or m.group('z')).strip().lower()}",
            )
            if (m.group("x") or m.group("y") or m.group("z")).lower().split()[-1] not in _PRONOUNS
            else None
        ),
        importance=9.0,
    ),
    _rule(
        r"\bI (?:always |really )?(?:react|reacted) (?:badly |terribly |"
        r"really badly )?to (?P<x>.+)",
        lambda m, _: (
            (f"avoids:{_key(_obj(m.group('x')))}", f"reacts badly to {_obj(m.group('x'))}")
            if _obj(m.group("x")) and _obj(m.group("x")).lower() not in _PRONOUNS
            else None
        ),
        importance=8.5,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been|^) {_ADVERB}(?:off|avoiding|cutting out|staying off|steering "
        r"clear of) (?!to\b|work\b|sick\b|home\b|out\b|now\b|for\b|on\b|the hook\b|duty\b|today\b)"
        r"(?P<x>[\w -]{2,25}?)(?=\s*(?:$|[,.;!]|for\b|since\b|because\b|at the\b|these\b|now\b|"
        r"right\b|completely\b|entirely\b|altogether\b|this\b|until\b))",
        lambda m, _: (
            (f"avoids:{_key(m.group('x'))}", f"avoids {_obj(m.group('x'))}")
            if _obj(m.group("x"))
            else None
        ),
        importance=8.5,
    ),
    _rule(
        r"\bI (?:have to |need to |must |try to |always )?avoid (?P<x>.+)|\bmy (?:stomach|body|gut|"
        r"skin|system) (?:can't|cannot|doesn't|does not|won't) (?:handle|take|tolerate|do|like) "
        r"(?P<y>.+)",
        lambda m, _: (
            (
                f"avoids:{_key(_obj(m.group('x') or m.group('y')))}",
                f"avoids {_obj(m.group('x') or m.group('y'))}",
            )
            if _obj(m.group("x") or m.group("y"))
            and _obj(m.group("x") or m.group("y")).lower() not in _PRONOUNS
            else None
        ),
        importance=8.5,
    ),
    _rule(
        rf"\bI(?:'m| am)? (?:on|take|taking|'m taking|have to take|need to take) "
        rf"(?P<x>(?:{_MEDS}))\b",
        lambda m, _: (f"medication:{_key(m.group('x'))}", f"takes {m.group('x')}"),
        importance=9.0,
    ),
    _rule(
        r"\b(?:we're|we are|I'm|I am) (?:now )?expecting (?P<x>a baby|our first|our second|twins|"
        r"a little (?:boy|girl)|a boy|a girl)",
        lambda m, _: ("health:pregnancy", f"expecting {m.group('x')}"),
        importance=9.0,
    ),
    _rule(
        r"\bI(?:'m| am)? (?:use|in|rely on) (?:a )?(?P<x>wheelchair|walking stick|cane|crutches|"
        r"mobility scooter|hearing aids?|guide dog)",
        lambda m, _: ("health:mobility", f"uses a {m.group('x')}"),
        importance=8.5,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been|\bI) {_ADVERB}(?:eat|eating|keep|keeping) (?:a |strictly |"
        rf"mostly |fully )?(?P<x>{_DIETS})(?: diet)?\b",
        lambda m, _: ("diet", m.group("x").lower()),
        importance=8.5,
    ),
    _rule(
        rf"{_I_HAVE} been {_ADVERB}(?:a )?(?P<x>{_DIETS})\b",
        lambda m, _: ("diet", m.group("x").lower()),
        importance=8.5,
    ),
    _rule(
        rf"(?:^|\b(?:and|but|so)\s+)being (?:a |an )?(?P<x>{_DIETS})\b",
        lambda m, _: ("diet", m.group("x").lower()),
        importance=8.5,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} always been|^) {_ADVERB}(?:afraid|scared|terrified|frightened|"
        r"petrified|phobic) of (?P<x>[^,.;!?]+)|\bI (?:have|'ve got) (?:a |an )?(?:real |serious |"
        r"bad )?(?:fear|phobia) of (?P<y>[^,.;!?]+)",
        lambda m, _: (
            (
                f"fear:{_key(_cut(m.group('x') or m.group('y')))}",
                f"afraid of {_cut(m.group('x') or m.group('y'))}",
            )
            if _cut(m.group("x") or m.group("y"))
            else None
        ),
        importance=7.0,
    ),
    _rule(
        r"\bI (?:wear|need|have) (?P<x>glasses|contacts|contact lenses|hearing aids?|a hearing aid|"
        r"a brace|braces|a retainer|dentures|reading glasses|orthotics|insoles)\b",
        lambda m, _: (f"health:{_key(m.group('x'))}", f"wears {m.group('x')}"),
        importance=7.0,
    ),
    # -- people and pets --
    _rule(
        rf"\b(?:my|our) (?P<kin>{_KIN})(?:'s|s'|s)? names? (?:is|are|'s) (?P<name>.+)",
        _kin_named,
        importance=7.0,
    ),
    _rule(
        rf"\b(?:my|our|the) (?:\w+ )?(?P<kin>{_KIN}) (?:is|are|'s) (?:called|named) (?P<name>.+)",
        _kin_named,
        importance=7.0,
    ),
    _rule(
        rf"\b(?i:my|our|the) (?i:(?:new|little|baby|older|younger|big|eldest|youngest|rescue|two|"
        rf"three|"
        rf"other|lovely|gorgeous|adorable|old|beautiful|sweet|crazy) )*(?P<kin>(?i:{_KIN})),? "
        r"(?P<name>[A-Z][\w'’-]+(?:(?:,\s*|\s+and\s+|\s*&\s*)[A-Z][\w'’-]+)*)",
        _kin_named,
        importance=7.0,
        flags=0,
    ),
    _rule(
        rf"\b(?:a|an|our|my)\s+(?:[\w-]+\s+){{0,2}}?(?P<kin>{_KIN})\s+(?:named|called)\s+"
        r"(?P<name>.+)",
        lambda m, c: None if _someone_else(c[: m.start()]) else _kin_named(m, c),
        importance=7.0,
    ),
    _rule(
        rf"\b(?:re)?(?:named|called|christened) (?:the|our|my) (?P<kin>{_KIN}) (?P<name>.+)",
        _kin_named,
        importance=7.0,
    ),
    _rule(
        rf"\bI(?:'ve| have)?(?: got)? (?P<count>a|an|one|two|three|four|five|six|\d) "
        rf"(?:(?:little|young|grown-up|grown|teenage|rescue|lovely|crazy|older|younger) )?"
        rf"(?P<kin>{_KIN})\b(?:,? (?:called |named )?(?P<name>.+))?",
        lambda m, _: (
            [(_kin_subject(m.group("kin")), _called(m.group("kin"), _names(m.group("name"))))]
            if m.group("name") and _names(m.group("name"))
            else [
                (
                    f"{_kin_subject(m.group('kin'))}:count",
                    f"has {m.group('count')} {m.group('kin').lower()}",
                )
            ]
            if m.group("count").lower() not in {"a", "an", "one"}
            else None
        ),
        importance=7.0,
    ),
    _rule(
        rf"\b(?P<name>[A-Z][\w'’-]+), (?i:my|our) (?P<kin>(?i:{_KIN}))\b",
        lambda m, _: (
            (_kin_subject(m.group("kin")), _called(m.group("kin"), [m.group("name")]))
            if m.group("name").lower() not in _NAME_STOP
            else None
        ),
        importance=7.0,
        flags=0,
    ),
    # -- identity --
    _rule(
        r"\b(?i:my (?:first )?name is|my name's|I go by|people call me|everyone calls me) "
        r"(?P<x>[A-Z][\w'-]+(?: [A-Z][\w'-]+)?)",
        lambda m, _: ("name", m.group("x")),
        importance=7.5,
        flags=0,
    ),
    _rule(
        r"\b(?i:call me) (?P<x>[A-Z][\w'-]+)\b",
        lambda m, _: ("name", m.group("x")),
        importance=7.5,
        flags=0,
    ),
    _rule(
        r"(?:^|\b(?i:hi|hello|hey)[,!]?\s+)I'm (?P<x>[A-Z][a-z]+)\b"
        r"(?![ -](?:[a-z]|[A-Z]\w+ [a-z]))",
        lambda m, _: (
            None
            if re.fullmatch(_NATIONALITIES + "|" + _LANGUAGES, m.group("x").lower())
            or m.group("x").lower() in _NAME_STOP
            else ("name", m.group("x"))
        ),
        importance=7.5,
        flags=0,
    ),
    _rule(
        rf"{_I_AM} (?P<age>\d{{1,2}})(?: years? old| yrs? old| y/?o| years young)?"
        r"(?=\s*(?:$|[,.;!)]|and\b|but\b|so\b|now\b|this\b|next\b|years?\b|yrs?\b|y/?o\b|"
        r"myself\b|btw\b|lol\b|with\b|-ish\b))",
        _age,
        importance=6.5,
    ),
    _rule(
        r"\bI(?:'m| am) an? (?P<age>\d{1,2})[- ]year[- ]old\b|\bI (?:just |recently )?turned "
        r"(?P<age2>\d{1,2})\b",
        lambda m, _: ("age", f"{m.group('age') or m.group('age2')} years old"),
        importance=6.5,
    ),
    _rule(
        rf"\bmy (?:birthday|bday|b-day|date of birth|dob)(?: is|'s)?(?: on)? (?P<x>{_DATE})",
        lambda m, _: ("birthday", f"birthday {m.group('x')}"),
        importance=7.5,
    ),
    _rule(
        rf"\bI was born (?:on )?(?P<x>{_DATE}(?:,? \d{{4}})?|in \d{{4}})",
        lambda m, _: ("birthday", f"born {m.group('x')}"),
        importance=7.0,
    ),
    _rule(
        rf"{_I_AM} {_ADVERB}(?:half )?(?P<x>{_NATIONALITIES})\b(?! (?:food|cuisine|class|course|"
        r"lessons?|speaker|film|dish|music))",
        lambda m, _: ("nationality", m.group("x").title()),
        importance=6.0,
    ),
    _rule(
        r"^(?P<age>\d{1,2}) (?:years old|yrs old|y/?o|year old)\b|\bI(?:'ll| will) be (?P<age2>"
        r"\d{1,2}) (?:next|this|in|on|soon)\b|\bI(?:'m| am) in my (?P<dec>(?:early |mid |late |"
        r"mid-)?"
        r"(?:twenties|thirties|forties|fifties|sixties|seventies|eighties|[2-8]0s))\b",
        lambda m, _: (
            "age",
            f"{m.group('age')} years old"
            if m.group("age")
            else f"turning {m.group('age2')} soon"
            if m.group("age2")
            else f"in their {m.group('dec')}",
        ),
        importance=6.5,
    ),
    _rule(
        r"\bI(?:'m| am) (?P<x>\d(?:[.,]\d{1,2})? ?m|1\d\d ?cm|\d ?(?:ft|foot|feet|')(?: ?\d{1,2}"
        r"(?: ?in(?:ches)?|\")?)?)(?: tall)?\b|\bI weigh (?:about |around )?(?P<w>\d{2,3} ?(?:kg|"
        r"kilos|lbs|pounds|stone(?: \d+)?))",
        lambda m, _: (
            ("height", f"{m.group('x')} tall")
            if m.group("x")
            else ("weight", f"weighs {m.group('w')}")
        ),
        importance=5.5,
    ),
    _rule(
        r"\bas (?:someone|somebody|a person|a woman|a man|a guy|a girl|a lady|a mum|a mom|a dad|"
        r"a parent) (?:who's|who is|who just turned|who turned|aged|of) (?P<age>\d{1,2})\b",
        _age,
        importance=6.5,
    ),
    # -- home --
    _rule(
        r"\bI (?:no longer|don't|do not) live in (?P<x>.+)",
        _object_fact("home_city", "no longer lives in {}"),
        importance=6.5,
    ),
    _rule(
        rf"(?:\b(?:I|we) {_ADVERB}(?:live|live|stay|reside)|(?:{_I_AM}|\bwe're|\bwe are) "
        rf"{_ADVERB}(?:living|based|located|settled)|^{_ADVERB}(?:living|based)) "
        r"(?:in|near|outside|just outside) (?P<x>.+)",
        lambda m, _: (
            ("home_city", f"lives in {_obj(m.group('x'))}")
            if _obj(m.group("x"))
            and not re.match(r"(?i)(?:fear|hope|denial|sin|peace)\b", m.group("x"))
            else None
        ),
        importance=6.5,
    ),
    _rule(
        r"(?:^|,\s*)(?:now |currently |these days )?(?:living|based) (?:in|near) (?P<x>.+)",
        _object_fact("home_city", "lives in {}"),
        importance=6.5,
    ),
    _rule(
        r"(?:\b(?:my|our) |^)home(?: for me| for us| base)?(?: these days| now)? is (?:in |now )?"
        r"(?!where\b|a\b|the\b|my\b|our\b|not\b|always\b|never\b)(?P<x>.+)",
        _object_fact("home_city", "lives in {}"),
        importance=6.5,
    ),
    _rule(
        r"\b(?:my|our) (?:new )?(?:flat|apartment|house|place|home|condo|cottage) (?:is )?(?:in|"
        r"near)"
        r" (?P<x>.+)|\b(?:I|we) (?:just )?(?:bought|rent|rented|own) (?:a |an |our |my )?(?:\w+ )?"
        r"(?:flat|apartment|house|place|home|condo) in (?P<y>.+)",
        lambda m, _: (
            ("home_city", f"lives in {_obj(m.group('x') or m.group('y'))}")
            if _obj(m.group("x") or m.group("y"))
            else None
        ),
        importance=6.5,
    ),
    _rule(
        r"\bhere in (?P<x>[A-Z][\w'-]+(?: [A-Z][\w'-]+)?)",
        lambda m, c: (
            ("home_city", f"lives in {m.group('x')}")
            if not re.search(
                r"(?i)\b(?:visit|visiting|trip|holiday|vacation|conference|week|weekend|"
                r"few days|staying|business|tour)\b",
                c,
            )
            else None
        ),
        importance=6.0,
        flags=0,
    ),
    _rule(
        r"\b(?i:I'm|I am) (?i:originally )?(?i:from) (?P<x>[A-Z][\w'-]+(?: [A-Z][\w'-]+)*)|"
        r"\b(?i:I) (?i:grew up|was raised) in (?P<y>[A-Za-z][\w'-]+(?: [A-Z][\w'-]+)*)|"
        r"^(?i:born and raised|born and bred|grew up) in (?P<z>[A-Za-z][\w'-]+(?: [A-Z][\w'-]+)*)",
        lambda m, _: ("hometown", f"from {m.group('x') or m.group('y') or m.group('z')}"),
        importance=5.5,
        flags=0,
    ),
    _rule(
        r"\b(?i:I'm|I am|we're|we are) (?i:now |currently )?(?i:in|settled in) (?P<x>[A-Z][\w'-]+"
        r"(?: [A-Z][\w'-]+)*)(?= (?i:now|these days|for good|permanently)\b)",
        lambda m, _: ("home_city", f"lives in {m.group('x')}"),
        importance=6.5,
        flags=0,
    ),
    _rule(
        r"\b(?:I|we)(?:'ve| have) (?:lived|been living) in (?P<x>[^,.;!?]+?) (?:for|since)\b",
        _object_fact("home_city", "lives in {}"),
        importance=6.5,
    ),
    _rule(
        r"\b(?i:I'm|I am|we're|we are) (?P<x>[A-Z][\w'-]+(?: [A-Z][\w'-]+)?)-based\b",
        lambda m, _: ("home_city", f"lives in {m.group('x')}"),
        importance=6.5,
        flags=0,
    ),
    # -- work --
    _rule(
        r"\bI (?:no longer|don't|do not) work (?:at|for|as) (?P<x>.+)",
        _object_fact("work", "no longer works at {}"),
        importance=6.5,
    ),
    _rule(
        rf"(?:\bI {_ADVERB}work|(?:{_I_AM}|{_I_HAVE} been) {_ADVERB}working|^{_ADVERB}working)"
        r"(?: from home| remotely| part-time| full-time| freelance| shifts)? "
        r"(?P<prep>as|at|for|in) (?P<x>.+)",
        lambda m, _: (
            ("work", f"works {m.group('prep').lower()} {_cut(m.group('x'))}")
            if _obj(m.group("x"))
            and not re.match(
                r"(?i)(?:home|progress|the garden|a team|teams|my (?:current |new |old )?(?:job|"
                r"role|"
                r"free time|spare time)|the (?:mornings?|evenings?|afternoons?|day|nights?)|shifts|"
                r"pairs|groups|batches|bursts|sprints|cycles|silence|peace)\b",
                _cut(m.group("x")),
            )
            else None
        ),
        importance=6.5,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been|\bI was|^I'm) {_ADVERB}(?:an? |the (?=(?:ceo|cto|cfo|coo|"
        rf"founder|"
        rf"co-founder|owner|head|director|manager|principal|headteacher|editor|"
        rf"chef)\b))(?P<job>(?:(?!(?:fan|"
        rf"bit|lot|big fan|member|huge fan|sucker|believer|kind|type|sort|part)\b)[\w-]+ ){{0,3}}"
        rf"(?:{_JOBS}))\b(?:s)?(?: (?:at|for|in|with) (?P<org>[^,.;!?]+))?",
        _job,
        importance=6.5,
    ),
    _rule(
        rf"\b[Aa]s an? (?P<job>(?:[\w-]+ ){{0,3}}(?:{_JOBS}))\b(?: (?:at|for|in) (?P<org>[^,]+?))?"
        r",? (?:I|we)\b",
        _job,
        importance=6.5,
    ),
    _rule(
        rf"(?:\bI(?:'ve| have|'m| am)?|^|\band) {_ADVERB}(?:started|began|start|begin|starting|"
        rf"joined|got a job|landed a job|got hired|was hired|was promoted|got promoted|'m starting|"
        rf"training|retraining|studying|qualifying|qualified|working)"
        rf"(?: (?:work|working|a new job|a new role))?(?: as| to be| to become| towards being)"
        rf" an? (?P<job>(?:[\w-]+ ){{0,3}}"
        rf"(?:{_JOBS}))\b(?: (?:at|for|in|with) (?P<org>[^,.;!?]+))?",
        _job,
        importance=6.5,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been) {_ADVERB}(?P<job>retired|unemployed|self-employed|"
        r"between jobs|on maternity leave|on paternity leave|a stay-at-home (?:mum|mom|dad|parent)|"
        r"a full-time (?:mum|mom|dad|parent))\b",
        lambda m, _: ("work", m.group("job").lower()),
        importance=6.5,
    ),
    _rule(
        r"\bI (?:now |currently |still )?teach (?P<x>[^,.;!?]+)",
        lambda m, _: ("work", f"teaches {_cut(m.group('x'))}") if _cut(m.group("x")) else None,
        importance=6.5,
    ),
    _rule(
        rf"\bmy (?:day )?job (?:is|as an?) (?P<job>(?:[\w-]+ ){{0,3}}(?:{_JOBS}))\b|"
        rf"(?:{_I_AM}|{_I_HAVE} been) {_ADVERB}in (?P<x>marketing|finance|sales|it|tech|hr|law|"
        r"banking|insurance|consulting|retail|hospitality|healthcare|education|publishing|"
        r"advertising|pharma|real estate|construction|logistics|software|academia|journalism|"
        r"recruitment|accounting|engineering|research|government|the nhs|the army|the navy)\b",
        lambda m, _: ("work", m.group("job") if m.group("job") else f"works in {m.group('x')}"),
        importance=6.5,
    ),
    _rule(
        r"\bI (?:run|own|manage|co-own|founded|started) (?:a|an|my own|the|our) (?P<x>(?:[\w&'-]+ )"
        r"{0,3}(?:business|company|shop|store|café|cafe|restaurant|bakery|bar|pub|salon|studio|"
        r"agency|practice|clinic|firm|startup|start-up|farm|b&b|hotel|charity|gym|consultancy))\b",
        lambda m, _: ("work", f"runs a {m.group('x')}"),
        importance=6.5,
    ),
    _rule(
        rf"\b(?:I(?:'ve| have)? )?(?:joined|moved to|"
        rf"went to) (?P<org>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*)*)"
        rf" as an? (?P<job>(?:[\w-]+ ){{0,3}}(?i:{_JOBS}))\b|\b(?i:I(?:'ve| have)? )?(?i:got|"
        rf"landed|"
        r"accepted|started|took|start)(?i: (?:a|the|my)(?: new)?| a new| my new)? (?i:job|role|"
        r"position) (?i:at|with) (?P<org2>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*)*)",
        lambda m, _: (
            ("work", f"{m.group('job')} at {m.group('org')}")
            if m.group("org")
            else ("work", f"works at {m.group('org2')}")
        ),
        importance=6.5,
        flags=0,
    ),
    # -- how to answer --
    _rule(
        rf"\b(?:reply|replies|replying|respond|responding|responses|answer|answers|answering|write|"
        rf"writing|talk|talking|speak|speaking|chat|message)"
        rf"(?: to me| me| us| back| with me)?(?: only| always)? in (?P<x>{_LANG})\b|\b(?:switch|"
        rf"go|change|"
        rf"stick|keep it)"
        rf" (?:back )?(?:to|with) (?P<y>{_LANG})(?=\s*(?:$|[,.!;]|please|from now|again|for|when|"
        rf"with))|^(?:and |also |oh and )?in (?P<w>{_LANG}),? please\b|"
        rf"\buse (?P<z>{_LANG})(?= (?:with me|from now|please|when|for (?:your )?(?:answers|"
        r"replies))|\s*[,.!]|$)",
        lambda m, _: (
            "answer_language",
            f"answer in {(m.group('x') or m.group('y') or m.group('z') or m.group('w')).title()}",
        ),
        importance=8.0,
        request=True,
    ),
    _rule(
        r"(?:\b(?:use|prefer|always|please|only|stick to|give me|answer in|reply in|respond in|"
        r"format (?:it|answers|replies) as|in|as)\b[^.?!]{0,25}?\b(?P<x>bullet(?:ed)? points?|"
        r"bullets|"
        r"numbered (?:lists?|steps)|step[- ]by[- ]step|steps|lists?|tables?|plain text|no markdown|"
        r"markdown|short paragraphs|prose)\b|"
        r"^(?P<y>bullet(?:ed)? points?|bullets|numbered lists?|tables?|plain text|no markdown)"
        r" (?:please|only|always|from now on))",
        lambda m, c: (
            ("answer_format", f"answer in {(m.group('x') or m.group('y')).lower()}")
            if _STANDING.search(c)
            else None
        ),
        importance=8.0,
        request=True,
    ),
    _rule(
        r"\b(?:don't|do not|never|no|stop|avoid|without|please no|skip the) (?:use |using |add "
        r"|adding |with |put |putting )?(?:any )?(?P<x>emojis?|emoticons|exclamation (?:marks|"
        r"points)"
        r"|jargon|slang|swearing|profanity|small talk|pleasantries|disclaimers|caveats)\b",
        lambda m, _: ("answer_style", f"no {m.group('x').lower()} in answers"),
        importance=8.0,
        request=True,
    ),
    _rule(
        r"\bkeep (?:your |the |all )?(?:answers?|replies|responses|it|things|them)(?: \w+)? "
        r"(?P<x>short|brief|concise|simple|detailed|under \d+ words|to \w+ sentences)\b|"
        r"\b(?P<y>short|brief|concise|detailed|longer|in-depth|one-line) (?:answers?|replies|"
        r"responses)(?= (?:please|only|from now|always)|\s*[,.!]|$)|\bno more than (?P<z>\w+ "
        r"(?:sentences|words|lines|paragraphs))\b",
        lambda m, c: (
            ("answer_length", f"answers {_length(m).lower()}") if _STANDING.search(c) else None
        ),
        importance=8.0,
        request=True,
    ),
    _rule(
        r"(?:\b(?:use|prefer|stick to|give me|always|in|only)\b[^.?!]{0,15}?\b(?P<x>metric|"
        r"imperial|celsius|fahrenheit)\b|^(?P<y>metric|imperial|celsius|fahrenheit)(?: units)? "
        r"(?:please|only))",
        lambda m, c: (
            ("units", f"uses {(m.group('x') or m.group('y')).lower()} units")
            if _STANDING.search(c)
            else None
        ),
        importance=8.0,
        request=True,
    ),
    _rule(
        rf"(?:{_I_AM}|\bwe're|\bwe are) {_ADVERB}(?:on|in) (?:the )?(?P<x>(?:(?:central|eastern|"
        rf"western) "
        r"european|british summer|greenwich mean|indian standard|japan standard|china standard|"
        r"australian eastern)|pacific|eastern|central|mountain|atlantic|alaska|hawaii|greenwich|"
        r"gmt|utc|bst|cet|cest|eet|eest|ist|jst|kst|"
        r"aest|aedt|acst|awst|nzst|nzdt|pst|pdt|est|edt|cst|cdt|mst|mdt|(?:gmt|utc) ?[+-] ?\d+)"
        r"(?: standard| daylight)?(?P<t> time(?: zone)?| timezone| zone)?\b|\bmy time ?zone is "
        r"(?P<y>[\w+ -]+)",
        lambda m, _: (
            ("timezone", f"{(m.group('x') or _obj(m.group('y'))).title()} time")
            if m.group("y") or m.group("t") or len(m.group("x")) <= 5
            else None
        ),
        importance=8.0,
        request=True,
    ),
    _rule(
        rf"\bI (?:also )?(?:speak|understand|read|can speak) (?P<langs>(?:(?:a (?:bit|little)"
        rf"(?: of)? |some |basic |fluent |decent |conversational |"
        rf"a few words of )?(?:{_LANG})(?:,\s*|\s+and\s+|\s*&\s*"
        rf"|\s+plus\s+)?)+)",
        _speaks,
        importance=6.0,
    ),
    _rule(
        rf"{_I_AM} (?:fluent|native|bilingual|conversational|proficient) in (?P<langs>.+)|"
        rf"\bmy (?P<l4>{_LANG}) is (?:\w+ )?(?:fluent|good|decent|basic|rusty|ok|okay|native|"
        r"conversational|pretty good|very good|not bad)\b|"
        rf"\bmy (?:native|first|mother) (?:language|tongue) is (?P<l2>{_LANG})|"
        rf"{_I_AM} a native (?P<l3>{_LANG}) speaker",
        lambda m, _: (
            [(f"speaks:{m.group('l4').lower()}", m.group(0)[3:].strip())]
            if m.group("l4")
            else _speaks(m, "")
            if m.group("langs")
            else [
                (
                    f"speaks:{(m.group('l2') or m.group('l3')).lower()}",
                    f"native {(m.group('l2') or m.group('l3')).title()} speaker",
                )
            ]
        ),
        importance=6.0,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been) {_ADVERB}(?:learning|studying) (?P<x>{_LANG})\b",
        lambda m, _: (f"learning:{m.group('x').lower()}", f"learning {m.group('x').title()}"),
        importance=5.5,
    ),
    # -- plans, goals, numbers --
    _rule(
        rf"(?:\b(?:my|our|the|a|an)\s+|"
        rf"^)(?P<mod>(?:[\w'-]+\s+){{0,2}}?)(?P<event>{_EVENTS})\b(?!-)",
        _plan,
        category="plan",
        importance=7.0,
    ),
    _rule(
        r"(?:\b(?:my|our|the|a|an)\s+|^)(?P<mod>(?:[\w'-]+\s+){0,2}?)(?P<event>[\w-]{3,})"
        r"(?= (?:is |'s |was |got |has been )?(?:booked|scheduled|planned|set|arranged|fixed|due|"
        r"pencilled in|penciled in|confirmed|rescheduled|postponed|moved|pushed|brought forward|"
        r"happening|coming up)\b)",
        _plan,
        category="plan",
        importance=7.0,
    ),
    _rule(
        rf"(?:(?:{_I_AM}|\bwe're|\bwe are|\bI'll be|\bwe'll be|\bI will be)\s+{_ADVERB}|^)"
        r"(?:moving|relocating|emigrating) (?:back )?(?:to|abroad to) (?P<x>.+)",
        lambda m, c: (
            (
                "plan:move",
                f"moving to {_obj(m.group('x'))}"
                + (
                    f" {d.group(0)}"
                    if (d := re.search(_DATE, c[m.end("x") - len(m.group("x")) :], re.I))
                    else ""
                ),
            )
            if _obj(m.group("x"))
            else None
        ),
        category="plan",
        importance=7.0,
    ),
    _rule(
        rf"(?:{_I_AM}|\bwe're|\bwe are|\bI'll be|\bwe'll be) {_ADVERB}(?:going|heading|flying|"
        r"travell?ing|off|driving|visiting) (?:back )?(?:to )?(?P<x>.+)",
        lambda m, c: (
            (
                "plan:trip",
                f"going to {_obj(m.group('x'))}"
                + (f" {d.group(0)}" if (d := re.search(_DATE, c, re.I)) else ""),
            )
            if re.search(_DATE, c, re.I)
            and _obj(m.group("x"))
            and not re.match(
                r"(?i)(?:bed|sleep|work|the gym|school|try|be|have|get|make|do)\b", m.group("x")
            )
            else None
        ),
        category="plan",
        importance=7.0,
    ),
    _rule(
        r"\b(?:my |our )?(?:main |big |new |one )?(?:goal|aim|target|resolution|ambition|dream)"
        r"(?: for (?:this|next|the) (?:year|month|summer|season|spring|autumn|winter))?"
        r"(?: is|:)\s*(?:to )?(?P<x>[^.;!?]+)",
        lambda m, _: (
            ("goal", f"goal: {m.group('x').strip(' ,')}") if m.group("x").strip() else None
        ),
        category="plan",
        importance=6.5,
    ),
    _rule(
        rf"(?:{_I_AM}|{_I_HAVE} been) {_ADVERB}training for (?:a |an |the |my )?(?P<x>[^,.;!?]+)",
        lambda m, _: ("goal", f"training for {m.group('x').strip()}"),
        category="plan",
        importance=6.5,
    ),
    _rule(
        r"\bI (?i:drive|own|'m driving|am driving|have got|'ve got) (?i:a|an) (?P<x>(?:(?:\d{4}|"
        r"old|new|used|second-hand|little|red|blue|black|white|silver|grey|gray|green|electric|"
        r"hybrid|battered|trusty) )*(?:[A-Z][\w-]*)(?: (?:[A-Z0-9][\w-]*|hybrid|estate|"
        r"hatchback|saloon|SUV|van|truck|pickup|convertible))*)",
        lambda m, _: ("car", f"drives a {m.group('x')}"),
        importance=5.5,
        flags=0,
    ),
    _rule(
        r"\bmy car is (?:a|an) (?P<x>[^,.;!?]+)",
        lambda m, _: ("car", f"drives a {_cut(m.group('x'))}"),
        importance=5.5,
    ),
    _rule(
        rf"\b(?:my |our |the )?budget(?: for (?:the |a |an |my |our )?(?P<thing>[\w -]{{2,25}}?))?"
        rf"(?: is| of|'s|:| =| will be| would be)\s*(?:about |around |roughly |up to |max |maximum "
        rf"|under |below |no more than |£|\$|€)?(?P<amount>{_AMOUNT})|\b(?P<thing2>[\w-]+) "
        rf"budget(?: is| of|'s|:)\s*(?:about |around |roughly |up to |max )?(?P<amount2>{_AMOUNT})",
        lambda m, _: _budget(
            m.group("thing") or m.group("thing2"), m.group("amount") or m.group("amount2")
        ),
        importance=6.0,
        request=True,
    ),
    _rule(
        rf"\bkeep (?:it|the (?P<thing>(?:[\w-]+ ){{0,2}}?[\w-]+)|things|costs|spending) "
        rf"(?:under|below|within|to|at) (?:about |around )?(?P<amount5>{_AMOUNT})|"
        rf"\b(?:I|we) (?:can't|cannot|don't want to|won't) (?:spend|pay) more than (?P<amount3>"
        rf"{_AMOUNT})|\b(?:I|we) (?:have|'ve got) (?:about |around |"
        rf"roughly )?(?P<amount4>{_AMOUNT})"
        rf" to spend|"
        rf"\b(?:I|we) (?:can|could) (?:now |finally )?(?:spend|afford|go up to|stretch to|do|pay)"
        rf"(?: up to| as much as| around)? (?P<amount>{_AMOUNT})|\b(?:go|spend|stretch) up to "
        rf"(?P<amount2>{_AMOUNT})",
        lambda m, _: _budget(
            m.group("thing") if m.group("thing") not in (None, "cost", "total") else None,
            m.group("amount")
            or m.group("amount2")
            or m.group("amount3")
            or m.group("amount4")
            or m.group("amount5"),
        ),
        importance=6.0,
        request=True,
    ),
    _rule(
        r"\bI(?:'m| am)? (?:a |an )?(?:(?:uk|us|eu|european) )?size (?P<x>\w+(?:[.,]\d)?)"
        r"(?P<rest>(?: in (?P<g>shoes?|jeans|trousers|pants|dresses|tops|shirts|t-shirts|"
        r"bras?|rings?|boots))?(?: \((?:uk|us|eu)\)| (?:uk|us|eu))?)|\bI (?:wear|take) (?:a )?"
        r"(?:(?:uk|us|eu) )?size (?P<x2>\w+(?:[.,]\d)?)(?: (?:in )?(?P<g2>shoes?|jeans|trousers|"
        r"dresses|boots))?|\bmy (?P<g3>shoe|dress|ring|jeans|waist|trouser|shirt|bra|collar|boot)"
        r" size is (?P<x3>\w+)",
        lambda m, c: (
            "size:" + _garment(m.group("g") or m.group("g2") or m.group("g3")),
            f"size {m.group('x') or m.group('x2') or m.group('x3')}"
            + (f"{m.group('rest')}" if m.group("rest") else "")
            + (f" ({m.group('g2') or m.group('g3')})" if m.group("g2") or m.group("g3") else ""),
        ),
        importance=5.5,
    ),
    _rule(
        rf"(?P<x>{_EMAIL})",
        lambda m, c: (
            ("email", f"email {m.group('x')}")
            if re.search(r"\b(?:my|me|I|use|reach|contact|email is|new email)\b", c, re.I)
            and not re.search(
                rf"\b(?:his|her|their|(?:{_RELATIONS})'s)\s+(?:\w+\s+)?(?:email|"
                r"address)",
                c[: m.start()],
                re.I,
            )
            else None
        ),
        importance=6.5,
    ),
    _rule(
        rf"\b(?:phone|mobile|cell|number|tel|telephone|whatsapp|call me on|text me on|reach me on)"
        rf"\b[^.!?]{{0,40}}?(?P<x>{_PHONE})",
        lambda m, c: (
            ("phone", f"phone {m.group('x').strip()}")
            if not re.search(
                rf"\b(?:his|her|their|(?:{_RELATIONS})'s)\s+(?:\w+\s+)?(?:phone|mobile|"
                r"number)",
                c[: m.start("x")],
                re.I,
            )
            else None
        ),
        importance=6.5,
    ),
    _rule(
        r"\bmy (?:home |new |postal )?address is (?P<x>[^.;!?]+)",
        lambda m, _: ("address", f"address: {m.group('x').strip()}"),
        importance=6.5,
    ),
    # -- likes, hobbies --
    _rule(
        rf"\bI {_ADVERB}(?P<neg>don't|do not|no longer|can't stand|cannot stand|hate|dislike|"
        r"detest|loathe|can't bear|despise|'m not a fan of|am not a fan of|'m not into|am not "
        r"into)(?P<verb> (?:like|enjoy|love|care for|care about|follow|fancy)|) (?P<x>.+)",
        lambda m, c: (
            _likes(m, c)
            if m.group("verb").strip()
            or m.group("neg").lower() not in {"don't", "do not", "no longer"}
            else None
        ),
        category="preference",
        importance=5.5,
    ),
    _rule(
        rf"\bI {_ADVERB}(?P<verb>love|like|enjoy|adore|prefer)\b(?! (?:to|it|that|this|when|how|"
        r"the way|you|your|him|her|them|what|if|a lot of what|replies|answers|responses|"
        r"(?:the |these |those |that |this |your |all )?(?:idea|ideas|tip|tips|suggestion|"
        r"suggestions|sound|look|fact|option|options|recommendation|recommendations|approach|"
        r"list|plan|sound of|thought)|"
        r"(?:short|long|brief|detailed) (?:replies|answers))\b) (?P<x>.+)",
        _likes,
        category="preference",
        importance=5.5,
    ),
    _rule(
        rf"(?:{_I_AM}) {_ADVERB}(?:(?:really|totally|so|very|huge|big|massive) )?(?P<verb>into|a "
        r"(?:big |huge |massive )?fan of|obsessed with|crazy about|passionate about|mad about|"
        r"addicted to) (?P<x>.+)",
        lambda m, c: (
            (f"likes:{_key(_obj(m.group('x')))}", f"into {_obj(m.group('x'))}")
            if _obj(m.group("x"))
            else None
        ),
        category="preference",
        importance=5.5,
    ),
    _rule(
        rf"{_I_AM} an? (?:big|huge|massive|massive|die-hard|diehard|"
        rf"lifelong) (?P<x>[\w' -]{{2,25}}?)"
        r" fan\b|\bI can't get enough of (?P<y>.+)",
        lambda m, _: (
            (
                f"likes:{_key(_obj(m.group('x') or m.group('y')))}",
                f"loves {_obj(m.group('x') or m.group('y'))}",
            )
            if _obj(m.group("x") or m.group("y"))
            else None
        ),
        category="preference",
        importance=5.5,
    ),
    _rule(
        rf"{_I_AM} not (?:big on|keen on|a big fan of|really into|into|fond of) (?P<x>.+)|"
        r"(?:^|[,:]\s*)(?P<y>(?:[\w-]+\s+){0,2}[\w-]+?) (?:isn't|is not|aren't|"
        r"are not) (?:really )?"
        r"my (?:thing|cup of tea|jam|scene)",
        lambda m, _: (
            (
                f"likes:{_key(_obj(m.group('x') or m.group('y')))}",
                f"dislikes {_obj(m.group('x') or m.group('y'))}",
            )
            if _obj(m.group("x") or m.group("y"))
            and _obj(m.group("x") or m.group("y")).lower() not in _PRONOUNS
            else None
        ),
        category="preference",
        importance=5.5,
    ),
    _rule(
        rf"{_I_AM} an? (?P<adj>keen|avid|passionate|enthusiastic|amateur|regular|serious|big|huge|"
        r"competitive|casual|weekend|club) (?P<x>(?:[\w-]+ )?\w+(?:er|ist|or))\b",
        lambda m, _: (f"hobby:{_key(m.group('x'))}", f"{m.group('adj')} {m.group('x')}"),
        category="preference",
        importance=5.0,
    ),
    _rule(
        r"\bmy (?P<label>go-to|usual|regular|favou?rite|fave|fav)(?: (?P<what>[\w -]{2,20}?))?"
        r"(?: order)? (?:is|are|'s|has to be) (?P<x>.+)",
        _usual,
        category="preference",
        importance=5.5,
    ),
    _rule(
        rf"\bI {_ADVERB}(?:play|do|practi[sc]e|go) (?:the |a bit of |some )?(?P<x>{_HOBBIES})\b",
        lambda m, _: (f"hobby:{_key(m.group('x'))}", _conjugate(m.group(0)[2:].strip())),
        category="preference",
        importance=5.0,
    ),
    _rule(
        rf"(?:\bI(?:'ve| have)?|^|\band) {_ADVERB}(?:started|taken up|took up|got into|gotten into"
        rf"|began|picked up|been) (?P<x>{_HOBBIES})\b(?: (?:instead|lately|again|regularly|a lot|"
        r"recently|every|for|three|twice))?",
        lambda m, _: (
            f"hobby:{_key(m.group('x'))}",
            f"started {m.group('x').lower()}"
            if "been" not in m.group(0)
            else f"does {m.group('x').lower()}",
        ),
        category="preference",
        importance=5.0,
    ),
    _rule(
        rf"\b(?P<x>{_HOBBIES})(?: \w+)? (?P<f>(?:once|twice|three times|four times|five times|"
        r"\d+ times|every|each|several times|a few times|(?:one|two|three|four|five|six|\d+) "
        r"(?:evenings|mornings|nights|days|times|afternoons|sessions)) (?:a|per|every|each) "
        r"(?:week|month|day|weekend))",
        lambda m, _: (f"hobby:{_key(m.group('x'))}", f"{m.group('x').lower()} {m.group('f')}"),
        category="preference",
        importance=5.0,
    ),
    _rule(
        r"(?:^|\bI(?:'ve| have)? )(?:cancelled|canceled|quit|stopped|dropped|ditched|gave up|"
        r"given up|"
        r"left|sold|ended) (?P<old>[^,.;!?]+?),? (?:and )?(?:I(?:'ve| have)? |now )?(?:joined|"
        r"switched to|started|got|moved to|gone for|went for|bought|signed up (?:for|with)|"
        r"picked up|taken up|took up) (?P<new>[^,.;!?]+)",
        lambda m, _: (
            (f"~{_key(m.group('old'))}", f"{_cut(m.group('new'))}")
            if _cut(m.group("new"))
            else None
        ),
        category="preference",
        importance=5.5,
        fallback=True,
    ),
    _rule(
        r"\bI(?:'ve| have)? (?:switched|changed|moved over|moved on) "
        r"(?:from (?P<from>[^,.;!?]+?) )?to (?P<x>[^,.;!?]+)",
        lambda m, _: (
            (
                f"~{_key(m.group('from'))}" if m.group("from") else "usual",
                f"switched to {_obj(m.group('x'))}",
            )
            if _obj(m.group("x"))
            else None
        ),
        category="preference",
        importance=5.5,
        fallback=True,
    ),
    _rule(
        r"^(?:(?:btw|also|oh and|and|but|so|honestly|fyi|just so you know|for context|fwiw|"
        r"for the record|full disclosure)[,:]?\s+)*(?:I|we) (?:(?:also|still|usually|always|"
        r"normally|really|actually|currently|now|mostly|only|basically) )*(?P<verb>wear|use|own|"
        r"work|live|speak|drive|ride|play|keep|eat|drink|take|volunteer|coach|study|teach|run|"
        r"care for|look after|suffer from)"
        r" (?!(?:a |any |no |some |the )?(?:question|questions|idea|ideas|clue|time|problem|"
        r"problems|issue|issues|doubt|feeling|thought|thoughts|choice|fun|way|chance|trouble|"
        r"plans|plan|meeting|call)\b|to\b|it\b|that\b|this\b|them\b|you\b|been\b|had\b|know\b|"
        r"think\b|want\b|need\b|like\b|mind\b|care\b|see\b|remember\b|understand\b|get\b|"
        r"believe\b|wait\b|do\b|go\b|say\b|tell\b|find\b|imagine\b|help\b|stop\b|figure\b|"
        r"really\b|even\b|sure\b|\w+ing\b)(?P<x>[^,.;!?]{3,60})",
        lambda m, c: (
            (
                f"about:{m.group('verb').lower().lstrip(chr(39))} {_key(_cut(m.group('x')))}",
                f"{_third(m.group('verb'))} {_cut(m.group('x'))}",
            )
            if len(_cut(m.group("x")).split()) >= 1 and _cut(m.group("x"))
            else None
        ),
        importance=4.0,
        fallback=True,
    ),
    _rule(
        r"(?:^|\b(?:please|pls|also|and|oh and|just) )(?:remember|don't forget|keep in mind)"
        r" (?:that )?(?!the following\b|this\b|these\b)"
        r"(?!(?:that|this|it|to|when|me)\b)(?P<x>.{6,})",
        lambda m, _: (f"note:{_key(_obj(m.group('x')))}", _obj(m.group("x"))),
        importance=6.0,
        fallback=True,
    ),
]


def _length(m: re.Match[str]) -> str:
    return m.group("x") or m.group("y") or f"no more than {m.group('z')}"


def _food(text: str) -> str:
    """ "Anything with sesame" -> "sesame"."""
    return re.sub(
        r"(?i)^(?:anything|everything|something|food|stuff) (?:with|containing) ", "", text.strip()
    )


def _third(verb: str) -> str:
    """ "wear" -> "wears", "can't" -> "can't", "'ve got" -> "has"."""
    verb = verb.lower()
    fixed = {
        "have": "has",
        "'ve got": "has",
        "can't": "can't",
        "cannot": "can't",
        "don't": "doesn't",
        "never": "never",
        "care for": "cares for",
        "look after": "looks after",
        "suffer from": "suffers from",
        "teach": "teaches",
    }
    return fixed.get(verb, verb + "s")


def _conjugate(phrase: str) -> str:
    """ "play the cello" -> "plays the cello"."""
    verb, _, rest = phrase.partition(" ")
    third = {"do": "does", "go": "goes"}.get(verb.lower(), verb + "s")
    return f"{third} {rest}".strip()


def _garment(word: str | None) -> str:
    if not word:
        return "clothes"
    word = word.lower()
    singular = {
        "shoe": "shoes",
        "boot": "shoes",
        "boots": "shoes",
        "trouser": "trousers",
        "pants": "trousers",
        "jean": "jeans",
        "dresses": "dress",
        "tops": "top",
        "shirts": "shirt",
        "t-shirts": "t-shirt",
        "bras": "bra",
        "rings": "ring",
    }
    return singular.get(word, word)


def _move(clause: str) -> list[tuple[str, str]]:
    """A completed move ("we ended up moving to Lyon", "moved here to Calgary in 2019")."""
    match = re.search(
        r"(?:\b(?:I|we)(?:'ve|'d| have| had)? |^|\bended up |\bfinally |\bjust |\bso )"
        rf"{_ADVERB}(?:moved|relocated|emigrated|moving|relocating)(?: back| over| here| out| "
        r"house| away)*(?: (?:from (?P<from>[^,.;!?]+?) )?(?:to|into) (?P<x>.+))",
        clause,
        re.I,
    )
    if not match:
        return []
    progressive = re.search(r"\b(?:moving|relocating)\b", match.group(0), re.I)
    if progressive and not re.search(
        r"\b(?:ended up|finally|just|been)\s+(?:moving|relocating)", match.group(0), re.I
    ):
        return []  # "I'm moving to ..." is a plan (plan:move)
    place = _obj(match.group("x"))
    if not place or re.search(r"\b(?:flat|house|place|apartment|home|room)\b", place, re.I):
        return []  # "we moved to a bigger flat" says nothing about the city
    return [("home_city", f"moved to {place}")]


# -- Chinese ----------------------------------------------------------------------------

_ZH_PLACE = r"([\u4e00-\u9fffA-Za-z]{2,10}?)"
_ZH_AFTER_PLACE = r"(?=了|来|去|住|这边|那边|以后|之后|后|，|,|。|！|!|？|\?|；|的时候|$)"
_ZH_RULES: list[_Rule] = [
    _rule(
        r"我(?:(?:对|吃)(?P<x>[^，。！？,.!?]{1,12}?)(?:严重|有点|会|特别|非常)?过敏|(?:有|会)?"
        r"(?P<y>[^对的，。！？,.!?]{1,6}?)过敏(?:症)?)",
        lambda m, _: (
            None
            if re.match(_ZH_OTHERS, m.group("x") or m.group("y"))
            else (
                f"allergy:{m.group('x') or m.group('y')}",
                f"对{m.group('x') or m.group('y')}过敏",
            )
        ),
        importance=9.0,
    ),
    _rule(
        r"我(?:不能|不可以|没法|一点都不能|不能再)(?:吃|喝|碰)(?P<x>[^，。！？,.!?]{1,10})",
        lambda m, _: (f"avoids:{m.group('x')}", f"不能吃{m.group('x')}"),
        importance=9.0,
    ),
    _rule(
        r"我(?:现在|已经|一直|从小)?(?:是)?(?P<x>吃素|吃全素|素食者|素食主义者|纯素食者|纯素|"
        r"生酮饮食|穆斯林|清真)",
        lambda m, _: ("diet", m.group("x")),
        importance=8.5,
    ),
    _rule(
        r"我(?:现在|已经|一直)?不吃(?P<x>肉|猪肉|牛肉|羊肉|海鲜|鱼|辣|鸡蛋|乳制品|牛奶|香菜|葱|"
        r"蒜|糖|甜食|面食|麸质)",
        lambda m, _: (f"avoids:{m.group('x')}", f"不吃{m.group('x')}"),
        importance=8.5,
    ),
    _rule(
        r"我(?:有|患有|得了)(?P<x>哮喘|糖尿病|高血压|低血压|胃病|心脏病|癫痫|过敏性鼻炎|鼻炎|"
        r"抑郁症|焦虑症|失眠|偏头痛|关节炎|湿疹|痛风|贫血|甲亢|甲减)",
        lambda m, _: (f"health:{m.group('x')}", f"有{m.group('x')}"),
        importance=9.0,
    ),
    _rule(
        r"我(?:是|有点|有)?(?P<x>左撇子|色盲|近视|远视|高度近视|乳糖不耐受|麸质不耐受|素食者)",
        lambda m, _: (f"health:{m.group('x')}", m.group("x")),
        importance=8.0,
    ),
    _rule(
        rf"我(?:已经)?怀孕(?:了)?(?P<x>{_ZH_NUM}+(?:周|个月))?",
        lambda m, _: ("health:pregnancy", f"怀孕{m.group('x') or ''}"),
        importance=9.0,
    ),
    _rule(
        rf"我(?:们)?(?:家)?(?:的)?(?P<kin>{_ZH_REL}|{_ZH_PET})(?:的名字)?(?:叫|名叫|叫做|的名字是)"
        r"(?P<name>[\u4e00-\u9fffA-Za-z]{1,6}?)(?=[，。！？,.!?、；\s]|今年|$)",
        lambda m, _: (
            f"pet:{m.group('kin')}"
            if re.fullmatch(_ZH_PET, m.group("kin"))
            else f"family:{m.group('kin')}",
            f"{m.group('kin')}叫{m.group('name')}",
        ),
        importance=7.0,
    ),
    _rule(
        rf"我(?:们)?(?:家)?(?:养了|有)(?:一只|一条|一个|只|条|个)(?P<kin>{_ZH_PET}|{_ZH_REL})"
        r"[，,]?(?:叫|名叫|叫做)(?P<name>[\u4e00-\u9fffA-Za-z]{1,6}?)(?=[，。！？,.!?、；\s]|$)",
        lambda m, _: (
            f"pet:{m.group('kin')}"
            if re.fullmatch(_ZH_PET, m.group("kin"))
            else f"family:{m.group('kin')}",
            f"{m.group('kin')}叫{m.group('name')}",
        ),
        importance=7.0,
    ),
    _rule(
        r"我(?:叫|的名字是|名叫)(?P<x>[^\s，。！？,.!?]{1,12}?)(?=[，。！？,.!?]|$)",
        lambda m, _: ("name", m.group("x")),
        importance=7.5,
    ),
    _rule(
        rf"我(?:今年|现在|已经)?(?P<x>{_ZH_NUM}{{1,3}})岁",
        lambda m, _: ("age", f"{m.group('x')}岁"),
        importance=6.5,
    ),
    _rule(
        r"我的?生日(?:是|在)?(?P<x>[0-9一二三四五六七八九十]+月[0-9一二三四五六七八九十]+[日号])",
        lambda m, _: ("birthday", f"生日{m.group('x')}"),
        importance=7.5,
    ),
    _rule(
        rf"我(?:们)?(?:家)?(?:现在|目前|一直|也)?(?:住在|生活在|定居在|在){_ZH_PLACE}(?:住|生活|定居)?"
        rf"{_ZH_AFTER_PLACE}",
        lambda m, c: (
            ("home_city", f"住在{m.group(1)}") if re.search(r"住|生活|定居", m.group(0)) else None
        ),
        importance=6.5,
    ),
    _rule(
        rf"我(?:们)?(?:已经|刚|刚刚|终于)?(?:[\u4e00-\u9fff]{{0,4}}?)搬(?:到|去|家到)(?:了)?"
        rf"{_ZH_PLACE}{_ZH_AFTER_PLACE}",
        lambda m, _: ("home_city", f"搬到了{m.group(1)}"),
        importance=6.5,
    ),
    _rule(
        rf"(?:我|^)(?:现在|目前|如今)?(?:在|是)(?P<org>.{{2,20}})(?P<verb>当|做|担任|干)(?P<job>"
        rf"[\u4e00-\u9fff]{{0,4}}(?:{_ZH_JOBS}))",
        lambda m, _: ("work", f"在{m.group('org')}{m.group('verb')}{m.group('job')}"),
        importance=6.5,
    ),
    _rule(
        r"(?:我|^)(?:现在|目前|如今)?在(?P<org>[^，。！？,.!?]{0,10}?(?:公司|企业|外企|国企|银行|医院|"
        r"学校|大学|工厂|厂|店|局|集团|机构|事务所|研究所|律所|工作室|报社|电视台|政府|部门))"
        r"(?P<verb>当|做|担任|干)(?P<job>[\u4e00-\u9fff]{2,6}?)(?=[，。！？,.!?、；\s]|$)",
        lambda m, _: ("work", f"在{m.group('org')}{m.group('verb')}{m.group('job')}"),
        importance=6.5,
    ),
    _rule(
        r"(?:我|^)(?:现在|目前)?在(?P<org>[^，。！？,.!?]{2,20}?)(?:工作|上班|实习)",
        lambda m, _: ("work", f"在{m.group('org')}工作"),
        importance=6.5,
    ),
    _rule(
        rf"我(?:现在|目前)?是(?:一名|一个|一位|个|名)?(?P<job>[\u4e00-\u9fff]{{0,4}}?"
        rf"(?:{_ZH_JOBS}))(?=[，。！？,.!?、；\s]|$)",
        lambda m, _: ("work", m.group("job")),
        importance=6.5,
    ),
    _rule(
        rf"(?:请|麻烦|以后|之后|你|一直|总是|都)+(?:一直|总是|都)?用(?P<x>{_ZH_LANG})(?:来)?"
        r"(?:回复|回答|跟我说|和我说|交流|写|聊)",
        lambda m, _: ("answer_language", f"用{m.group('x')}回复"),
        importance=8.0,
    ),
    _rule(
        rf"我(?:会说|会讲|说|讲)(?P<x>(?:{_ZH_LANG})(?:(?:和|、|跟)(?:{_ZH_LANG}))*)",
        lambda m, _: ("languages", f"会说{m.group('x')}"),
        importance=6.0,
    ),
    _rule(
        r"我(?:很|非常|最|也|特别|超)?(?P<neg>不再|不|不太)?喜欢(?P<x>[^，。！？,.!?]{1,15})",
        lambda m, _: (
            f"likes:{m.group('x')}",
            f"{'不' if m.group('neg') else ''}喜欢{m.group('x')}",
        ),
        category="preference",
        importance=5.5,
    ),
    _rule(
        r"我(?:很|非常|最|特别)?(?:讨厌|受不了|不爱)(?P<x>[^，。！？,.!?]{1,15})",
        lambda m, _: (f"likes:{m.group('x')}", f"不喜欢{m.group('x')}"),
        category="preference",
        importance=5.5,
    ),
    _rule(
        r"预算(?:是|有|大概|在|为|差不多|最多)*(?P<x>\d[\d,.]*\s*(?:万|千|百)?(?:元|块|美元|欧元|"
        r"英镑)?)",
        lambda m, _: ("budget:*", f"预算{m.group('x')}"),
        importance=6.0,
    ),
    _rule(
        r"(?:请)?记住(?P<x>.{2,})",
        lambda m, _: (f"note:{m.group('x')[:20]}", m.group("x")),
        importance=6.0,
        fallback=True,
    ),
]
_ZH_PHONE = re.compile(
    r"(?:手机号|号码|电话|手机|联系方式)[^。！？]{0,12}?(?P<x>\+?\d[\d -]{6,}\d)"
)
_ZH_EVENT_RULE = re.compile(rf"(?P<event>{_ZH_EVENTS})")
_ZH_TIME_RULE = re.compile(_ZH_TIME)


# --- the engine ----------------------------------------------------------------------


def _emit(built: object) -> list[tuple[str, str]]:
    if built is None:
        return []
    if isinstance(built, tuple):
        return [built]
    return list(built)  # type: ignore[call-overload]


def _pronoun_names(clause: str, context: tuple[str, ...]) -> list[tuple[str, str]]:
    """ "named him Biscuit", "(her name's Pickle)": the name of the referent."""
    out = []
    for m in re.finditer(
        r"\b(?:(?:re)?named|called|christened) (?:him|her|it|them) (?P<a>[A-Z][\w'’-]+)|"
        r"\b(?:her|his|its|their) names?(?: is|'s| are) (?P<b>[A-Z][\w'’-]+)",
        clause,
    ):
        name = m.group("a") or m.group("b")
        if name.lower() in _NAME_STOP:
            continue
        before = re.sub(
            rf"(?i)\b(?:the|my|our)\s+(?:\w+\s+)?(?:{_KIN})\s+$", "", clause[: m.start()]
        )  # "the kids named her ...": not the kids
        noun = _referent(before, *context)
        if noun is None:
            continue
        out.append((_kin_subject(noun), _called(noun, [name])))
    for m in re.finditer(
        r"(?:她|他|它)(?:叫|的名字叫|名叫)(?P<n>[\u4e00-\u9fff]{1,4}?)(?=[，。！？,.!?]|$)", clause
    ):
        noun = _referent(clause[: m.start()], *context)
        if noun is not None:
            kind = "pet" if re.fullmatch(_ZH_PET, noun) else "family"
            out.append((f"{kind}:{noun}", f"{noun}叫{m.group('n')}"))
    return out


def _clause_facts(clause: str, context: tuple[str, ...]) -> list[tuple[int, str, str, _Rule]]:
    zh = bool(re.search(r"[\u4e00-\u9fff]", clause))
    found: list[tuple[int, str, str, _Rule]] = []
    rules = _ZH_RULES if zh else _EN_RULES
    for rule in rules:
        if rule.fallback and found:
            continue
        for match in rule.pattern.finditer(clause):
            for subject, content in _emit(rule.build(match, clause)):
                if subject and content and content.strip():
                    found.append((match.start(), subject, content.strip(), rule))
    default = _Rule(re.compile(""), lambda m, c: None, "fact", 6.5)
    if not zh:
        for subject, content in _move(clause):
            found.append((0, subject, content, default))
    seen: set[str] = set()
    unique = []
    for item in found:  # two rules, one statement ("a root canal booked for ..."): the first
        if item[2] not in seen:
            seen.add(item[2])
            unique.append(item)
    found = unique
    for subject, content in _pronoun_names(clause, context):
        found.append(
            (len(clause), subject, content, _Rule(re.compile(""), lambda m, c: None, "fact", 7.0))
        )
    return found


def _zh_plan_sentence(sentence: str) -> FoundFact | None:
    """A dated event in a Chinese sentence ("航班改了，改成下午3点40起飞")."""
    event = _ZH_EVENT_RULE.search(sentence)
    if not event or not _ZH_TIME_RULE.search(sentence):
        return None
    kept = [c for c in _clauses(sentence) if not _is_question(c)]
    content = "，".join(c.strip("。！!.") for c in kept)
    if not content or not _ZH_TIME_RULE.search(content):
        return None
    return FoundFact(
        f"plan:{event.group('event')}", content, "plan", 7.0, hedged=bool(_HEDGE.search(content))
    )


_NEGATED = re.compile(r"^(?:no longer|not|dislikes|不再|不)\b", re.I)


def _merge(facts: list[FoundFact]) -> list[FoundFact]:
    """One fact per subject for one message.

    A statement and its own negation ("I no longer live in Berlin; I live in
    Munich"): the positive one. Two positive statements ("I'm vegan now -
    went fully plant-based"): both, in one fact.
    """
    merged: dict[str, FoundFact] = {}
    for fact in facts:
        old = merged.get(fact.subject)
        if old is None or (_NEGATED.match(old.content) and not _NEGATED.match(fact.content)):
            merged[fact.subject] = fact
        elif _NEGATED.match(fact.content) and not _NEGATED.match(old.content):
            continue
        elif fact.content.lower() not in old.content.lower():
            merged[fact.subject] = FoundFact(
                fact.subject,
                f"{old.content}; {fact.content}",
                old.category,
                max(old.importance, fact.importance),
                old.hedged and fact.hedged,
            )
    return list(merged.values())


#: How much of one message the rules read. Facts said in passing are in what a person
#: types; a longer message is a paste (a log, a document), and rules run over all of it
#: cost time that grows faster than its length (100,000 characters without breaks took
#: ~50 s, 10 MB never finished). The message itself is stored whole.
READ_LIMIT = 8_000


def readable_prefix(text: str, limit: int = READ_LIMIT) -> str:
    """The first ``limit`` characters of ``text``, cut after its last sentence end there
    (or its last space, or at ``limit`` when it has neither).

    Example:
        >>> readable_prefix("I'm vegan. " + "x" * 20, limit=15)
        "I'm vegan."
        >>> readable_prefix("short") == "short"
        True
    """
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = max(head.rfind(mark) for mark in (". ", "! ", "? ", "\n", "。", "！", "？"))
    if end > 0:
        return head[: end + 1].rstrip()
    space = head.rfind(" ")
    return head[:space] if space > 0 else head


def find_facts(text: str, *, previous: str = "") -> list[FoundFact]:
    """The facts one user message states about the user, in the order said.

    Only the message's :func:`readable_prefix` is read (:data:`READ_LIMIT`
    characters), so the time is bounded whatever its length.

    Args:
        text: The user's message.
        previous: The user's previous message, for "the kids named her
            Clementine" (who is "her"?).
    """
    text = strip_quoted(normalise_message(readable_prefix(text)))
    frame = _FRAME.search(text)
    if frame:  # role-play or fiction: nothing from there on is about the user
        start = max(text.rfind(".", 0, frame.start()), text.rfind("。", 0, frame.start()))
        text = text[: start + 1] if start >= 0 else ""
    results: list[FoundFact] = []
    previous = normalise_message(readable_prefix(previous))
    said = ""  # the message up to the clause being read (for "her name's Pickle")
    for sentence in _sentences(text):
        if _SARCASM.search(sentence):
            continue
        zh = bool(re.search(r"[\u4e00-\u9fff]", sentence))
        # "本来想辞职去大理开民宿，后来想想还是算了": a Chinese sentence rejects or
        # supposes as a whole (its clauses are split at every comma)
        if zh and (_REJECTED.search(sentence) or re.search(r"如果|假如|假设|要是|万一", sentence)):
            continue
        if zh and (plan := _zh_plan_sentence(sentence)):
            results.append(plan)
        if zh and (phone := _ZH_PHONE.search(sentence)):  # "我换了新号码，139..."
            results.append(FoundFact("phone", f"电话{phone.group('x')}", "fact", 6.5))
        for clause in _clauses(sentence):
            before, said = said, f"{said} {clause}"
            if _is_question(clause) or _HYPOTHETICAL.search(clause):
                continue
            doubt = bool(_HEDGE.search(clause))
            desire = bool(_DESIRE.search(clause))
            best: dict[str, tuple[int, str, _Rule]] = {}
            for position, subject, content, rule in _clause_facts(clause, (before, previous)):
                # the same subject twice in one clause: the later statement wins
                if subject not in best or position >= best[subject][0]:
                    best[subject] = (position, content, rule)
            for subject, (_, content, rule) in sorted(best.items(), key=lambda kv: kv[1][0]):
                results.append(
                    FoundFact(
                        subject=subject,
                        content=" ".join(content.split()),
                        category=rule.category,
                        importance=rule.importance,
                        hedged=doubt or (desire and not rule.request),
                    )
                )
    return _merge(results)
