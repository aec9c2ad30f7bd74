"""English word lists the rules are written with (jobs, relations, pets, diets, events...).

Data, not code: a pattern is built from these lists, so adding a job or a
condition is one word here.

Example:
    >>> import re
    >>> bool(re.fullmatch(KIN, "border collie")), "vegan" in DIETS.split("|")
    (True, True)
"""

from __future__ import annotations

import re

from langchain_tiered_memory.recall.time_expressions import MONTHS as MONTH_WORDS

STANDING = re.compile(
    r"\b(?:always|from now on|in future|in the future|going forward|every time|by default|"
    r"prefer|I like|I find|easier for me|for me|with me|answers|replies|responses|all the time|"
    r"whenever)\b",
    re.I,
)


def word_set(text: str) -> frozenset[str]:
    """The words of ``text`` as a set."""
    return frozenset(text.split())


PRONOUNS = word_set(
    "it that this which he she they them everything something anything stress work life you "
    "people mum mom dad what who there"
)


LANGUAGES = (
    "english|spanish|portuguese|french|german|italian|dutch|flemish|turkish|polish|russian|"
    "ukrainian|arabic|hebrew|hindi|urdu|bengali|punjabi|tamil|telugu|marathi|gujarati|"
    "japanese|korean|chinese|mandarin|cantonese|vietnamese|thai|indonesian|malay|tagalog|"
    "filipino|swedish|norwegian|danish|finnish|icelandic|greek|czech|slovak|hungarian|"
    "romanian|bulgarian|serbian|croatian|bosnian|slovenian|catalan|basque|galician|welsh|"
    "irish|gaelic|persian|farsi|swahili|afrikaans|latin|esperanto|estonian|latvian|"
    "lithuanian|albanian|armenian|georgian|kurdish|pashto|nepali|sinhala|khmer|lao|burmese|"
    "mongolian|amharic|somali|yoruba|igbo|hausa|zulu|xhosa|maori|hawaiian"
)
LANG = (
    rf"(?:(?:simplified|traditional|brazilian|european|british|american|mexican|swiss|"
    rf"canadian) )?(?:{LANGUAGES})"
)
NATIONALITIES = (
    "british|english|scottish|welsh|irish|american|canadian|australian|french|german|dutch|"
    "belgian|spanish|portuguese|italian|greek|turkish|polish|swedish|norwegian|danish|finnish|"
    "russian|ukrainian|chinese|japanese|korean|indian|pakistani|bangladeshi|brazilian|mexican|"
    "argentinian|argentine|chilean|colombian|peruvian|nigerian|kenyan|ghanaian|south african|"
    "egyptian|moroccan|israeli|iranian|iraqi|lebanese|syrian|vietnamese|thai|filipino|"
    "indonesian|malaysian|singaporean|swiss|austrian|czech|slovak|hungarian|romanian|"
    "bulgarian|serbian|croatian|icelandic|estonian|latvian|lithuanian|new zealander|kiwi|"
    "taiwanese|cuban|jamaican|venezuelan|ethiopian|scandinavian|european|latina|latino"
)
JOBS = (
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
RELATIONS = (
    "wife|husband|partner|spouse|boyfriend|girlfriend|fiance|fiancé|fiancée|son|daughter|"
    "sons|daughters|kid|kids|child|children|baby|toddler|twins|twin|boys|girls|mum|mom|mother|dad|"
    "father|parents|brother|sister|siblings|sibling|grandma|grandmother|granny|nan|grandpa|"
    "grandfather|grandad|granddad|grandson|granddaughter|grandkids|grandchildren|aunt|"
    "auntie|uncle|cousin|niece|nephew|stepson|stepdaughter|stepmum|stepmom|stepdad|"
    "stepfather|stepmother|best friend|boss|manager|flatmate|roommate|housemate|"
    "mother-in-law|father-in-law|sister-in-law|brother-in-law|son-in-law|daughter-in-law|"
    "eldest|youngest|little one|little girl|little boy|baby girl|baby boy"
)
PETS = (
    "dog|dogs|puppy|puppies|pup|cat|cats|kitten|kittens|kitty|rabbit|rabbits|bunny|hamster|"
    "guinea pig|guinea pigs|parrot|budgie|bird|horse|pony|tortoise|turtle|fish|goldfish|"
    "snake|lizard|gecko|ferret|chickens|hens|rat|mouse|pet|pets"
)
BREEDS = {
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
BREED_TO_SPECIES = {b: s for s, names in BREEDS.items() for b in names.split("|")}
ANIMAL = rf"(?:{BREEDS['dog']}|{BREEDS['cat']}|{PETS})"
KIN = rf"(?:{RELATIONS}|{ANIMAL})"
SPECIES = {
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
CONDITIONS = (
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
STATES = (
    "coeliac|celiac|diabetic|pre-diabetic|prediabetic|epileptic|asthmatic|anaemic|anemic|"
    "immunocompromised|colou?r-?blind|deaf|partially sighted|hard of hearing|autistic|"
    "dyslexic|pregnant|breastfeeding|vegan|vegetarian"
)
MEDS = (
    r"insulin|metformin|statins?|warfarin|the pill|antidepressants|beta[- ]blockers|"
    r"blood thinners|hrt|an inhaler|inhalers|antihistamines|steroids|iron tablets|"
    r"[a-z]+(?:ine|pril|sartan|statin|mab|xetine|azole|cillin|mycin|pine|done|zepam|zolam|"
    r"olol|prazole|thyroxine|formin|parin|tide|triptan|profen|fenac|amine|oxacin|cycline)"
)
DIETS = (
    "vegan|vegetarian|veggie|pescatarian|pescetarian|flexitarian|plant-based|plant based|"
    "keto|paleo|halal|kosher|teetotal|teetotaller|teetotaler|sober|fruitarian|raw vegan|"
    "gluten-free|gluten free|dairy-free|dairy free|low-carb|low carb|carnivore"
)
EVENTS = (
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
GENERIC_EVENTS = word_set(
    "appointment check-up checkup visit session consultation booking reservation class "
    "lesson course test scan review "
)
HOBBIES = (
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
MONTHS = "|".join(MONTH_WORDS)  # names and abbreviations, from the one month list
WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|tue|tues|thu|thur|thurs|fri"
DATE = (
    rf"(?:\b\d{{1,2}}(?:st|nd|rd|th)?(?: of)? (?:{MONTHS})\b|\b(?:{MONTHS}) \d{{1,2}}"
    rf"(?:st|nd|rd|th)?\b|\b\d{{1,2}}[:.]\d{{2}}\s*(?:am|pm|a\.m\.|p\.m\.)?|\b\d{{1,2}}\s*"
    rf"(?:am|pm|a\.m\.|p\.m\.)(?!\w)|\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b|\b\d{{4}}-\d{{2}}-"
    rf"\d{{2}}\b|\b(?:on |this |next |last )?(?:{WEEKDAYS})\b(?: (?:morning|afternoon|evening|"
    rf"night))?|\btomorrow\b|\btonight\b|\bnext (?:week|month|year|weekend|spring|summer|"
    rf"autumn|fall|winter)\b|\bthis (?:week|weekend|month|year|spring|summer|autumn|fall|"
    rf"winter)\b|\bthe \d{{1,2}}(?:st|nd|rd|th)\b(?: of (?:{MONTHS})\b)?|\bin (?:a |one |two |"
    rf"three |four |five |six "
    rf"|a few |\d+ )(?:days?|weeks?|"
    rf"months?|years?)\b|\b(?:in|by|since|until|till|from|end of|early|late|mid)[ -]"
    rf"(?:{MONTHS})\b|\bnoon\b|\bmidnight\b)"
)
AMOUNT = (
    r"(?:[$€£¥]\s?\d[\d,.]*\s?[kK]?\b|\b\d[\d,.]*\s?[kK]?(?:\s?(?:euros?|eur|dollars?|usd|"
    r"pounds?|quid|gbp|bucks|yuan|rmb|yen|francs?|chf|kr|sek|nok|dkk|grand))?\b)"
)
EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
PHONE = r"(?<![\w+])\+?\d[\d ()-]{6,}\d(?!\w)"
NAME_STOP = set(
    word_set(
        "i im me and or but the a an is was are has had who that this he she they it we you "
        "just also still again now then so lol btw ok "
    )
)
NAME_STOP.update(WEEKDAYS.split("|"))


I_AM = r"\bI(?:'m| am)"
I_HAVE = r"\bI(?:'ve| have)"
ADVERB = (
    r"(?:(?:now|currently|still|also|actually|already|just|recently|finally|fully|"
    r"completely|totally|strictly|mostly|basically|officially|really|very|severely|highly|"
    r"seriously|deathly|quite|mildly|slightly|a bit|kind of|kinda|pretty|so) )*"
)
