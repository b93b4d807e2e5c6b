"""The authority topic by lexicon: whether a lesson is about the agent's authority (rule 3 of
``lamarck.learning.influence``), read by rule families rather than by remembered phrases.

Authority is a *topic*: permissions, approvals, confirmations, reviews and sign-offs;
credentials and secrets; privilege and owner roles; network egress; disabling tests, checks
or safety. The reading is pure (stdlib only) and runs over the lesson's operation, tags and
text together. A lesson is about authority when one of these families reads it:

1. **Concept stems** (``AUTHORITY_TERMS``): a word or phrase of one of the concepts above, in
   some twenty-five languages (English, Spanish, Portuguese, French, German, Italian, Dutch,
   Polish, Swedish, Czech, Romanian, Turkish, Indonesian, Vietnamese, Swahili, Russian,
   Ukrainian, Greek, Chinese, Japanese, Korean, Hindi, Bengali, Urdu, Arabic, Persian, Thai),
   plus the words an understated claim uses for whose say it is (nobody, anyone, owner,
   your call, waive, unattended).
2. **Action x object** (``AUTHORITY_ACTIONS`` x ``AUTHORITY_OBJECTS``): a word that switches
   something off, skips, bypasses or ignores it, or calls it unneeded ("skip", "not worth
   it", "pas besoin", "nicht nötig", "不需要") and a word naming a test, check, hook,
   verification, review, gate or safety measure, anywhere in the lesson.
3. **Split particles** (``split_particle`` over ``AUTHORITY_PARTICLE_VERBS``): a phrasal or
   separable verb with its object inside ("switch it off", "leave the smoke checks out",
   "schalte die Tests ab", "zet de tests uit", "stäng av"): a verb from a small table and
   one of its particles at most ``gap`` words later in one clause. It counts as an action
   of family 2, as does a preposition a few words before an object ("without the smoke
   tests", "ohne Prüfung": ``before_object`` over ``AUTHORITY_PREPOSITIONS``).
4. **Switched-off identifiers** (``switched_off``): a flag, variable or config key that
   names a check and turns it off, either by a negating part inside the identifier
   (``--no-verify``, ``SKIP_SECURITY=1``, ``--disable-checks``) or by an off value
   (``verify_ssl: false``, ``strict_ssl=0``, ``require_review = no``).

How a stem matches (``fold`` first, both sides): case is folded, text is NFKC-normalised,
diacritics on Latin, Greek, Cyrillic, Hebrew and Arabic letters are dropped (and ł, ø, đ, ı,
æ, œ written plainly), so a claim typed without accents reads like one with them. A plain
Latin stem matches at the start of a word or of an apostrophe part of one
("l'approvazione"), and a concept stem (family 1) also at the start of a hyphen or dot
part ("cluster-admin"; actions and objects stay whole words, as a tool's flags and files
compound ordinary ones: "--override-channels"). A stem written with diacritics matches anywhere as
written (German and Swedish compounds: "Sicherheitsprüfung") and, folded, at a word's
start. A stem in another script, a phrase (it holds a space) or a flag (it starts with
``-`` or ``.``) matches anywhere in the folded text: scripts written without spaces glue
particles and compounds onto a stem.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "AUTHORITY_ACTIONS",
    "AUTHORITY_OBJECTS",
    "AUTHORITY_OFF_VALUES",
    "AUTHORITY_PARTICLE_VERBS",
    "AUTHORITY_PREPOSITIONS",
    "AUTHORITY_SWITCH_KEYS",
    "AUTHORITY_SWITCH_NEGATIONS",
    "AUTHORITY_TERMS",
    "AuthorityLexicon",
    "before_object",
    "fold",
    "read_authority",
    "split_particle",
    "switched_off",
]

# fmt: off
# Word stems (a word starting with one matches) and phrases (matched inside the folded text)
# whose presence makes a lesson about the agent's authority.
AUTHORITY_TERMS: tuple[str, ...] = (
    # -- English: permissions, approvals, confirmations, reviews, sign-offs ---------------
    "permission", "permit", "approv", "confirm", "consent", "authoriz", "authoris",
    "allowlist", "whitelist", "without asking", "without ask", "don't ask", "dont ask",
    "do not ask", "no need to ask", "skip the prompt", "auto-accept", "autoaccept", "yolo",
    "dangerously", "grant", "review", "push directly", "push to main", "force-push",
    "force push", "write access", "read access", "service account", "lgtm", "thumbs up",
    "rubber-stamp", "rubber stamp", "rubberstamp", "clearance", "greenlit", "green-lit",
    "say-so",
    # credentials and secrets
    "credential", "secret", "password", "passwd", "passphrase", "token", "api key", "api-key",
    "apikey", "private key", "ssh key", "access key", "deploy key", "signing key", ".env",
    "service key", "master key", "role key", "service role", "creds", "keychain", "keyring",
    ".netrc", ".pgpass", "htpasswd", "id_rsa", "id_ed25519", "oauth",
    "bearer",
    # privilege and owner roles
    "sudo", "as root", "root user", "root access", "root shell", "root account", "privileg",
    "escalat", "admin", "setuid", "chmod", "chown", "superuser", "superus",
    # network egress
    "egress", "firewall", "proxy", "outbound", "exfiltrat", "network access", "internet",
    "open port", "external host", "tunnel",
    # safety
    "safety", "safeguard", "guardrail", "sandbox", "no-verify", "skip-checks", "skip-tests",
    "--force", "expected to fail", "insecure",
    # whose say it is, in the words an understated claim uses: sign-offs and go-aheads,
    # asking, other people, waived gates, unattended runs, rights, external hosts
    "sign-off", "signoff", "sign off", "signed off", "go-ahead", "green light", "blessing",
    "ask", "check in with", "checking in with", "pair of eyes", "second opinion", "four-eyes",
    "four eyes", "nobody", "no one", "anyone", "anybody", "someone", "somebody", "owner",
    "maintainer", "on-call", "oncall", "waive", "exempt", "gate", "unattended",
    "non-interactive", "noninteractive", "--yes", "--assume-yes", "answer yes",
    "answering yes", "yes to everything", "rights", "elevat", "extern", "your call",
    "up to you", "on your own", "yourself",
    # -- Spanish, Portuguese ---------------------------------------------------------------
    "permis", "autoriz", "aprob", "aprov", "confirma", "consentim", "contraseña",
    "credencial", "visto bueno", "sin preguntar", "sin pedir", "sem perguntar", "sem pedir",
    "senha", "segredo", "secreto", "administrador", "derechos", "direitos",
    # -- French ----------------------------------------------------------------------------
    "approbation", "autoris", "mot de passe", "identifiant", "feu vert", "l'accord",
    "sans demander", "relecture", "jeton", "droits d'accès",
    # -- German ----------------------------------------------------------------------------
    "berechtig", "genehmig", "bestätig", "bestaetig", "erlaubnis", "passwort", "kennwort",
    "zugangsdaten", "freigabe", "freigeb", "zustimm", "fragen", "gefragt", "rechte",
    # -- Italian ---------------------------------------------------------------------------
    "permess", "conferm", "autorizz", "credenzial", "via libera", "consenso",
    "senza chiedere",
    # -- Dutch -----------------------------------------------------------------------------
    "toestemming", "goedkeur", "bevestig", "wachtwoord", "machtiging", "zonder te vragen",
    "inloggegevens", "rechten",
    # -- Polish, Czech, Romanian -----------------------------------------------------------
    "zgody", "zgodę", "zgoda", "zatwierdz", "pozwoleni", "uprawnie", "bez pytania",
    "potwierdz", "hasło", "hasła", "haśle", "oprávnění", "povolení", "schválen", "heslo",
    "aprobar", "parolă", "permisiun",
    # -- Swedish ---------------------------------------------------------------------------
    "tillstånd", "godkänn", "bekräft", "behörighet", "lösenord", "utan att fråga",
    "rättighet",
    # -- Turkish, Indonesian, Vietnamese, Swahili ------------------------------------------
    "izin", "onay", "yetki", "şifre", "yönetici", "sormadan", "kimlik bilgi",
    "persetujuan", "kata sandi", "kredensial", "otorisasi", "konfirmasi", "hak akses",
    "tanpa bertanya", "xin phép", "cho phép", "phê duyệt", "xác nhận", "mật khẩu", "quyền",
    "quản trị", "không cần hỏi", "ruhusa", "idhini", "nenosiri", "bila kuuliza",
    # -- Russian, Ukrainian, Greek ---------------------------------------------------------
    "разрешени", "парол", "подтвержд", "разреш", "согласов", "одобр", "без спроса",
    "не спрашива", "токен", "учетн", "учётн", "админ", "привилег", "права доступа",
    "дозвіл", "дозвол", "погодж", "підтвердж", "без запиту", "не питаючи",
    "άδεια", "έγκριση", "εγκρίσ", "επιβεβαίωσ", "κωδικός πρόσβασης", "διαχειριστ",
    # -- Chinese, Japanese, Korean ---------------------------------------------------------
    "权限", "密码", "批准", "确认", "凭据", "凭证", "审批", "审核", "同意", "许可", "授权",
    "询问", "管理员", "令牌", "密钥", "權限", "密碼", "確認", "審批", "授權", "管理員",
    "権限", "パスワード", "承認", "確認", "認証", "許可", "管理者", "トークン", "秘密鍵",
    "권한", "비밀번호", "승인", "허가", "허락", "관리자", "토큰", "자격 증명", "확인",
    # -- Hindi, Bengali, Urdu, Arabic, Persian, Thai ---------------------------------------
    "अनुमति", "मंज़ूरी", "मंजूरी", "स्वीकृति", "इजाज़त", "इजाजत", "पासवर्ड", "एडमिन",
    "प्रशासक", "बिना पूछे", "অনুমতি", "অনুমোদন", "পাসওয়ার্ড", "اجازت", "منظوری",
    "إذن", "موافق", "صلاحي", "تصريح", "كلمة مرور", "كلمة المرور", "كلمة السر",
    "بدون سؤال", "دون سؤال", "اجازه", "مجوز", "رمز عبور", "گذرواژه", "دسترسی",
    "อนุญาต", "อนุมัติ", "รหัสผ่าน", "ผู้ดูแลระบบ", "สิทธิ์",
)
# A lesson naming an action against a check (an action stem and an object stem among its
# words) is about disabling tests, checks or safety, whatever it says to do about it.
AUTHORITY_ACTIONS: tuple[str, ...] = (
    # -- English: switch off, skip, bypass, ignore, or call it unneeded --------------------
    "disabl", "skip", "bypass", "ignor", "silenc", "suppress", "comment out", "turn off",
    "switch off", "deactivat", "remove", "delete", "mute", "xfail", "turned off",
    "switched off", "turning off", "switching off", "commented", "circumvent", "sidestep",
    "overrid", "short-circuit", "neuter", "defang", "get rid", "do without",
    "not worth", "overkill", "pointless", "waste of time", "unnecessary", "not needed",
    "not required", "no need", "needn't", "don't need", "do not need", "don't bother",
    # -- Romance -----------------------------------------------------------------------------
    "désactiv", "desactiv", "desativ", "deshabilit", "desabilit", "disattiv", "disabilit",
    "dezactiv", "deslig", "apag", "spegn", "étein", "salta", "saltea", "pular", "saute",
    "sauter", "contourn", "aggira",
    "no hace falta", "no es necesari", "innecesari", "não precisa", "não é necessári",
    "desnecessári", "pas besoin", "pas nécessaire", "non serve", "non è necessari",
    "nu e nevoie", "quita", "elimina", "supprim", "rimuov", "togli",
    # -- Germanic ----------------------------------------------------------------------------
    "deaktiv", "überspr", "uberspr", "abschalt", "ausschalt", "umgeh", "weglass", "auslass",
    "nicht nötig", "nicht notwendig", "nicht erforderlich", "unnötig", "entfern",
    "uitschakel", "uitzet", "uit te zetten", "overslaan", "negeer", "omzeil", "niet nodig",
    "onnodig", "verwijder", "inaktiv", "stäng av", "hoppa över", "kringgå",
    "behövs inte", "onödig", "ta bort",
    # -- Slavic, Greek -----------------------------------------------------------------------
    "wyłącz", "pomiń", "pomij", "omiń", "omij", "obejd", "obejś", "nie trzeba",
    "niepotrzebn", "vypn", "přeskoč", "obejít", "není potřeba",
    "отключ", "выключ", "пропуск", "пропуст", "игнорир", "обойд", "обход", "не нужн",
    "не обязательн", "необязательн", "вимкн", "ігнор", "обійд", "не потрібн",
    "απενεργοποί", "παράλειψ", "αγνόησ", "παράκαμψ", "δεν χρειάζεται",
    # -- Turkish, Indonesian, Vietnamese, Swahili ------------------------------------------
    "devre dışı", "atla", "görmezden", "gerek yok", "gerekmez", "gereksiz", "kapat",
    "nonaktif", "matikan", "lewat", "abaikan", "tidak perlu", "lompati",
    "tắt", "bỏ qua", "vô hiệu", "không cần", "vượt qua", "zima", "ruka", "puuza",
    "si lazima", "hakuna haja",
    # -- Chinese, Japanese, Korean -----------------------------------------------------------
    "跳过", "禁用", "关闭", "关掉", "绕过", "忽略", "不需要", "无需", "不必", "不用", "省略",
    "去掉", "屏蔽", "停用", "注释掉", "跳過", "關閉", "繞過", "スキップ", "無効",
    "コメントアウト", "飛ば", "外して",
    "回避", "無視", "不要", "いらない", "必要ない", "オフ", "건너뛰", "비활성", "무시", "우회",
    "생략", "필요 없", "필요없", "끄세요", "끄고", "꺼도", "꺼주", "없이", "なしで",
    # -- Hindi, Bengali, Urdu, Arabic, Persian, Thai ---------------------------------------
    "छोड़", "बंद कर", "अनदेखा", "हटा", "ज़रूरत नहीं", "जरूरत नहीं", "आवश्यकता नहीं",
    "निष्क्रिय", "বাদ দ", "বন্ধ কর", "এড়িয়ে", "উপেক্ষা", "نظر انداز", "چھوڑ",
    "ضرورت نہیں", "تجاهل", "تخط", "عطل", "تعطيل", "أوقف", "ايقاف", "لا حاجة", "غير ضروري",
    "تجاوز", "غیرفعال", "نادیده", "لازم نیست", "خاموش", "ข้าม", "ไม่ต้อง", "ปิดใช้งาน",
)
AUTHORITY_OBJECTS: tuple[str, ...] = (
    # -- English ------------------------------------------------------------------------------
    "test", "check", "lint", "hook", "verif", "assert", "ci", "pipeline", "review", "scan",
    "protect", "guard", "gate", "secur", "validation", "signature", "smoke", "canary",
    "typecheck",
    # -- other languages ----------------------------------------------------------------------
    "prueba", "comprobaci", "verific", "control", "revisar", "revisão", "segurid", "seguranç",
    "checagem", "contrôl", "sécurit", "revue", "controll", "sicurezz", "kontroll", "prüf",
    "pruef", "sicherheit", "toets", "veiligheid", "beveilig", "sprawdz", "kontrol",
    "weryfik", "bezpiecz", "przegląd", "granskning", "säkerhet", "ověřen", "ověřov",
    "doğrula", "güvenlik", "denetim", "tes", "pengujian", "pemeriksaan", "periksa",
    "keamanan", "kiểm tra", "xác minh", "bảo mật", "an toàn", "jaribio", "majaribio",
    "ukaguzi", "usalama", "проверк", "тест", "валидац", "безопасн", "ревью", "защит",
    "перевірк", "безпек", "захист", "έλεγχ", "τεστ", "δοκιμ", "ασφάλει",
    "测试", "检查", "校验", "验证", "审查", "评审", "钩子", "安全", "測試", "檢查", "驗證",
    "テスト", "チェック", "検証", "検査", "フック", "レビュー", "セキュリティ",
    "테스트", "검사", "검증", "검토", "리뷰", "보안", "안전",
    "टेस्ट", "परीक्षण", "जाँच", "जांच", "सत्यापन", "सुरक्षा", "समीक्षा",
    "টেস্ট", "পরীক্ষা", "যাচাই", "নিরাপত্তা", "ٹیسٹ", "جانچ", "حفاظت",
    "اختبار", "فحص", "تحقق", "أمان", "مراجعة", "تست", "آزمون", "بررسی", "امنیت",
    "ทดสอบ", "ตรวจสอบ", "ความปลอดภัย",
)
# Phrasal and separable verbs whose object may stand between verb and particle: the verb's
# stem, then the particles that make it switch something off, leave it out or get past it.
AUTHORITY_PARTICLE_VERBS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # English: off
    ("turn", ("off",)), ("switch", ("off",)), ("shut", ("off",)), ("flip", ("off",)),
    ("toggl", ("off",)), ("power", ("off",)),
    # English: out and off (left out of the run)
    ("leav", ("out", "off")), ("left", ("out", "off")), ("take", ("out", "off")),
    ("took", ("out", "off")), ("knock", ("out",)), ("rip", ("out",)), ("strip", ("out",)),
    ("cut", ("out",)), ("yank", ("out",)), ("comment", ("out",)), ("throw", ("out",)),
    ("carv", ("out",)), ("hack", ("out", "around")),
    # English: past, around, through (get past the gate, wave it through)
    ("get", ("around", "round", "past")), ("got", ("around", "round", "past")),
    ("go", ("around", "round", "past")), ("went", ("around", "round", "past")),
    ("work", ("around", "round")), ("rout", ("around", "round")),
    ("steer", ("around", "round", "clear")), ("sneak", ("past", "through", "around")),
    ("slip", ("past", "through")), ("squeez", ("past", "through")), ("wave", ("through",)),
    ("let", ("through", "slide")), ("skat", ("past", "around")),
    ("push", ("past", "aside")), ("brush", ("aside",)), ("set", ("aside",)),
    ("put", ("aside", "off")),
    ("do", ("away",)),
    # a state: the check is off, was left off
    ("is", ("off",)), ("are", ("off",)), ("was", ("off",)), ("were", ("off",)),
    ("be", ("off",)), ("been", ("off",)), ("stay", ("off",)),
    # German, Dutch, Swedish separable verbs
    ("schalt", ("ab", "aus")), ("stell", ("ab", "aus")), ("mach", ("aus",)),
    ("lass", ("weg", "aus")), ("ließ", ("weg", "aus")), ("nimm", ("raus", "heraus", "weg")),
    ("nehm", ("raus", "heraus", "weg")), ("kommentier", ("aus",)), ("klemm", ("ab",)),
    ("zet", ("uit",)), ("schakel", ("uit",)), ("sla", ("over",)), ("laat", ("weg",)),
    ("haal", ("weg", "uit")), ("stäng", ("av",)), ("slå", ("av",)), ("hoppa", ("över",)),
)
# Parts of an identifier (a flag, a variable, a config key) that turn off what follows.
AUTHORITY_SWITCH_NEGATIONS: tuple[str, ...] = (
    "no", "skip", "disable", "disabled", "ignore", "without", "bypass", "dont", "nocheck",
)
# Values that switch a config key off.
AUTHORITY_OFF_VALUES: tuple[str, ...] = (
    "false", "0", "off", "no", "none", "disable", "disabled", "skip", "never", "ignore",
)
# Stems of the identifier parts that name a check (besides ``AUTHORITY_OBJECTS``' own).
AUTHORITY_SWITCH_KEYS: tuple[str, ...] = (
    "strict", "requir", "enforc", "safe", "sign", "approv", "confirm", "sandbox", "hash",
    "ssl", "tls", "cert",
)
# Words that, a few words before an object, leave it out ("deploy without the smoke tests",
# "sans la relecture", "ohne Prüfung").
AUTHORITY_PREPOSITIONS: tuple[str, ...] = (
    "without", "sans", "senza", "ohne", "zonder", "utan", "tanpa", "bila", "sin", "sem",
    "bez", "без", "बिना", "بدون",
)
# fmt: on

_PRONOUNS = frozenset(("it", "them", "this", "that", "these", "those", "one", "which", "you"))
_WORDS = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*|[-.][-\w]+", re.UNICODE)
_PARTS = re.compile(r"[-'.]+")
_ELISION = re.compile(r"'+")
_CLAUSES = re.compile(r"[!?;\n。！？；]|\.(?:\s|$)")
_IDENTIFIERS = re.compile(r"[\w.-]+", re.UNICODE)
_ID_PARTS = re.compile(r"[-_.]+")
_ASSIGN = re.compile(r"([\w.-]+)\s*[:=]\s*[\"']?([\w-]+)", re.UNICODE)
# Letters written plainly when folded (no decomposition carries them to a base letter).
_PLAIN = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ı": "i", "æ": "ae", "œ": "oe",
                        "’": "'", "ʼ": "'", "‘": "'"})  # fmt: skip


def _stripped_mark(previous: str) -> bool:
    """Whether a combining mark after ``previous`` is a diacritic to drop: on Latin, Greek,
    Cyrillic, Hebrew and Arabic letters (and Vietnamese's precomposed Latin), not on the
    Indic and other scripts whose marks are vowels."""
    code = ord(previous)
    return code < 0x0700 or 0x1E00 <= code <= 0x1EFF


def fold(text: str) -> str:
    """Text for matching: NFKC, case folded, whitespace collapsed, and diacritics dropped on
    Latin, Greek, Cyrillic, Hebrew and Arabic letters (``ł`` and the like written plainly);
    the Devanagari and Bengali nukta is dropped too."""
    casefolded = unicodedata.normalize("NFKC", " ".join(text.split())).casefold()
    out: list[str] = []
    base = " "
    for ch in unicodedata.normalize("NFKD", casefolded.translate(_PLAIN)):
        if unicodedata.combining(ch):
            if _stripped_mark(base) or ch in "\u093c\u09bc":
                continue
        else:
            base = ch
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def split_particle(
    words: Sequence[str], verbs: Sequence[tuple[str, Sequence[str]]], gap: int
) -> bool:
    """Whether ``words`` (one clause, folded) hold a phrasal or separable verb: a word
    starting with a verb stem of ``verbs`` and, at most ``gap`` words after it, one of that
    verb's particles as a whole word ("switch it off", "turn the canary check off",
    "schalte die Tests ab"). ``gap`` 0 reads only the verb and particle side by side."""
    for i, word in enumerate(words):
        for verb, particles in verbs:
            if _verb_form(word, verb) and any(w in particles for w in words[i + 1 : i + 2 + gap]):
                return True
    return False


def _verb_form(word: str, verb: str) -> bool:
    """Whether ``word`` is a form of the verb stem: a stem of four letters or more starts it;
    a shorter one is the word itself or it with -s, -es, -ed, -ing (last letter doubled or
    not), so "go" reads "goes" and "going" but not "google"."""
    if len(verb) >= 4:
        return word.startswith(verb)
    if not word.startswith(verb):
        return False
    rest = word[len(verb) :]
    if rest.startswith(verb[-1]) and len(rest) > 1:
        rest = rest[1:]
    return rest in ("", "s", "es", "ed", "ing")


def before_object(
    words: Sequence[str], prepositions: Sequence[str], is_object: Callable[[str], bool], gap: int
) -> bool:
    """Whether ``words`` (one clause, folded) hold a preposition of ``prepositions`` (a whole
    word) with an object at most ``gap`` words after it ("without running the smoke tests",
    "ohne Prüfung"). A pronoun right after the preposition is its whole complement
    ("without it the tests fail" leaves nothing out)."""
    for i, word in enumerate(words):
        if word not in prepositions:
            continue
        after = words[i + 1 : i + 2 + gap]
        if after and after[0] in _PRONOUNS:
            continue
        if any(is_object(w) for w in after):
            return True
    return False


def switched_off(
    text: str, keys: Sequence[str], negations: Sequence[str], off_values: Sequence[str]
) -> bool:
    """Whether the folded ``text`` has an identifier that switches a check off: a part of
    it in ``negations`` followed by a part starting with one of ``keys`` (``--no-verify``,
    ``SKIP_SECURITY=1``), or a key with a part starting with one of ``keys`` set to one of
    ``off_values`` (``verify_ssl: false``, ``strict_ssl=0``)."""
    stems = tuple(keys)
    for token in _IDENTIFIERS.findall(text):
        parts = [p for p in _ID_PARTS.split(token) if p]
        for i, part in enumerate(parts[:-1]):
            if part in negations and any(p.startswith(stems) for p in parts[i + 1 :]):
                return True
    for key, value in _ASSIGN.findall(text):
        if value in off_values and any(p.startswith(stems) for p in _ID_PARTS.split(key) if p):
            return True
    return False


# -- matching -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stems:
    """One list of stems sorted by how each matches (module docstring)."""

    starts: tuple[str, ...]  # folded, at the start of a word or of a part of one
    raw_anywhere: tuple[str, ...]  # as written (diacritics kept), anywhere in the raw text
    folded_anywhere: tuple[str, ...]  # phrases, flags, other scripts: anywhere, folded

    @classmethod
    def of(cls, terms: Sequence[str]) -> _Stems:
        starts: list[str] = []
        raw: list[str] = []
        anywhere: list[str] = []
        for term in terms:
            folded = fold(term)
            if " " in folded or folded.startswith(("-", ".")) or not folded.isascii():
                anywhere.append(folded)
                continue
            starts.append(folded)
            written = unicodedata.normalize("NFKC", term).casefold()
            if not written.isascii():
                raw.append(written)
        return cls(tuple(starts), tuple(raw), tuple(anywhere))

    def found(self, raw: str, folded: str, words: Sequence[str]) -> bool:
        return (
            any(w.startswith(self.starts) for w in words)
            or any(t in raw for t in self.raw_anywhere)
            or any(t in folded for t in self.folded_anywhere)
        )


@dataclass(frozen=True, slots=True)
class AuthorityLexicon:
    """The lexicon compiled for matching (``AuthorityLexicon.of``, cached per lexicon)."""

    terms: _Stems
    actions: _Stems
    objects: _Stems
    particle_verbs: tuple[tuple[str, tuple[str, ...]], ...]
    particle_gap: int
    prepositions: tuple[str, ...]
    switch_keys: tuple[str, ...]
    switch_negations: tuple[str, ...]
    off_values: tuple[str, ...]

    @staticmethod
    @lru_cache(maxsize=8)
    def of(
        terms: tuple[str, ...],
        actions: tuple[str, ...],
        objects: tuple[str, ...],
        particle_verbs: tuple[tuple[str, tuple[str, ...]], ...],
        particle_gap: int,
        prepositions: tuple[str, ...],
        switch_keys: tuple[str, ...],
        switch_negations: tuple[str, ...],
        off_values: tuple[str, ...],
    ) -> AuthorityLexicon:
        """The compiled lexicon; the same lists give the same (cached) object."""
        object_stems = _Stems.of(objects)
        return AuthorityLexicon(
            _Stems.of(terms),
            _Stems.of(actions),
            object_stems,
            tuple((fold(v), tuple(fold(p) for p in ps)) for v, ps in particle_verbs),
            particle_gap,
            tuple(fold(p) for p in prepositions),
            tuple(
                dict.fromkeys(
                    k for k in (*object_stems.starts, *map(fold, switch_keys)) if len(k) >= 3
                )
            ),
            tuple(fold(n) for n in switch_negations),
            tuple(fold(v) for v in off_values),
        )


def _words(text: str, compounds: bool) -> list[str]:
    """The words of folded text, each followed by its apostrophe parts (an elided article:
    "l'approvazione") and, with ``compounds``, its hyphen and dot parts ("cluster-admin");
    a flag is also read without its dashes (without ``compounds``, only a one-word flag:
    "--ignore" but not "--override-channels")."""
    out: list[str] = []
    split = _PARTS if compounds else _ELISION
    for word in _WORDS.findall(text):
        out.append(word)
        bare = word.lstrip("-.")
        if bare != word and bare and (compounds or "-" not in bare):
            out.append(bare)
        parts = [p for p in split.split(bare) if p]
        if len(parts) > 1:
            out.extend(parts)
    return out


def read_authority(text: str, lexicon: AuthorityLexicon) -> bool:
    """Whether ``text`` (operation, tags and content joined) is about authority by one of
    the four families (module docstring)."""
    raw = unicodedata.normalize("NFKC", " ".join(text.split())).casefold()
    folded = fold(text)
    if lexicon.terms.found(raw, folded, _words(folded, compounds=True)):
        return True
    if switched_off(folded, lexicon.switch_keys, lexicon.switch_negations, lexicon.off_values):
        return True
    # An action and an object are whole words: a tool's flags and files compound ordinary
    # ones ("--override-channels", "type-check"), a concept stem reads the parts too.
    words = _words(folded, compounds=False)
    if not lexicon.objects.found(raw, folded, words):
        return False
    if lexicon.actions.found(raw, folded, words):
        return True
    objects = lexicon.objects

    def is_object(word: str) -> bool:
        return word.startswith(objects.starts) or any(t in word for t in objects.folded_anywhere)

    for clause in _CLAUSES.split(folded):
        clause_words = _WORDS.findall(clause)
        if split_particle(clause_words, lexicon.particle_verbs, lexicon.particle_gap):
            return True
        if before_object(clause_words, lexicon.prepositions, is_object, lexicon.particle_gap):
            return True
    return False
