/* The tables of norm_words.h: one list of abbreviations, one of title
 * words, one of rulers' names. */
#include "text/norm_words.h"

#include <string.h>
#include <strings.h>
#include <unicode/uchar.h>

#include "text/utf8.h"

/* First matching row wins: a conditional reading comes before its default. */
static const qtts_norm_abbrev ABBREVS[] = {
    {"en", "Dr.", "Doctor", QTTS_ABBR_BEFORE_NAME}, {"en", "Mr.", "Mister", 0}, {"en", "Mrs.", "Missus", 0},
    {"en", "Ms.", "Miz", 0}, {"en", "Prof.", "Professor", 0}, {"en", "St.", "Saint", QTTS_ABBR_BEFORE_NAME},
    {"en", "St.", "Street", 0}, {"en", "Mt.", "Mount", QTTS_ABBR_BEFORE_NAME}, {"en", "Jr.", "Junior", 0},
    {"en", "Sr.", "Senior", 0}, {"en", "No.", "number", QTTS_ABBR_BEFORE_NUMBER}, {"en", "etc.", "et cetera", QTTS_ABBR_ENDS},
    {"en", "e.g.", "for example", 0}, {"en", "i.e.", "that is", 0}, {"en", "vs.", "versus", 0},
    {"en", "approx.", "approximately", 0}, {"en", "Ave.", "Avenue", 0}, {"en", "Dept.", "Department", 0},
    {"de", "z. B.", "zum Beispiel", 0}, {"de", "z.B.", "zum Beispiel", 0}, {"de", "d. h.", "das heißt", 0},
    {"de", "d.h.", "das heißt", 0}, {"de", "usw.", "und so weiter", QTTS_ABBR_ENDS}, {"de", "bzw.", "beziehungsweise", 0},
    {"de", "ca.", "circa", 0}, {"de", "Dr.", "Doktor", 0}, {"de", "Prof.", "Professor", 0},
    {"de", "Nr.", "Nummer", 0}, {"de", "Str.", "Straße", 0}, {"de", "vgl.", "vergleiche", 0},
    {"de", "u. a.", "unter anderem", 0}, {"de", "inkl.", "inklusive", 0},
    {"fr", "M.", "Monsieur", QTTS_ABBR_BEFORE_NAME}, {"fr", "Mme", "Madame", 0}, {"fr", "Mlle", "Mademoiselle", 0},
    {"fr", "Dr", "Docteur", 0}, {"fr", "etc.", "et cetera", QTTS_ABBR_ENDS},
    {"fr", "p. ex.", "par exemple", 0}, {"fr", "n°", "numéro", 0}, {"fr", "av.", "avenue", 0},
    {"es", "Sr.", "señor", 0}, {"es", "Sra.", "señora", 0}, {"es", "Srta.", "señorita", 0},
    {"es", "Dr.", "doctor", 0}, {"es", "Dra.", "doctora", 0}, {"es", "Ud.", "usted", 0},
    {"es", "Uds.", "ustedes", 0}, {"es", "etc.", "etcétera", QTTS_ABBR_ENDS}, {"es", "p. ej.", "por ejemplo", 0},
    {"es", "núm.", "número", 0}, {"es", "Avda.", "avenida", 0},
    {"it", "Sig.ra", "signora", 0}, {"it", "Sig.", "signor", 0}, {"it", "Dott.", "dottor", 0},
    {"it", "Prof.", "professor", 0}, {"it", "ecc.", "eccetera", QTTS_ABBR_ENDS}, {"it", "p. es.", "per esempio", 0},
    {"it", "n.", "numero", QTTS_ABBR_BEFORE_NUMBER},
    {"pt", "Sr.", "senhor", 0}, {"pt", "Sra.", "senhora", 0}, {"pt", "Dr.", "doutor", 0},
    {"pt", "Dra.", "doutora", 0}, {"pt", "etc.", "et cetera", QTTS_ABBR_ENDS}, {"pt", "p. ex.", "por exemplo", 0},
    {"pt", "nº", "número", 0}, {"pt", "Av.", "avenida", 0},
    {"ru", "т. е.", "то есть", 0}, {"ru", "т.е.", "то есть", 0}, {"ru", "т. д.", "так далее", QTTS_ABBR_ENDS},
    {"ru", "т.д.", "так далее", QTTS_ABBR_ENDS}, {"ru", "т. п.", "тому подобное", QTTS_ABBR_ENDS}, {"ru", "т.п.", "тому подобное", QTTS_ABBR_ENDS},
    {"ru", "т. к.", "так как", 0}, {"ru", "т.к.", "так как", 0}, {"ru", "ул.", "улица", 0},
    {"ru", "им.", "имени", 0}, {"ru", "др.", "другие", 0},
};

/* Words after which a roman numeral is a number. */
static const struct {
    const char *lang, *word;
} TITLES[] = {
    {"en", "Chapter"}, {"en", "chapter"}, {"en", "Part"}, {"en", "part"}, {"en", "Volume"}, {"en", "volume"},
    {"en", "Book"}, {"en", "Act"}, {"en", "Scene"}, {"en", "Section"}, {"en", "Article"}, {"en", "Phase"},
    {"en", "War"}, {"en", "Bowl"}, {"en", "Type"}, {"en", "Class"}, {"en", "Stage"}, {"en", "Level"},
    {"de", "Kapitel"}, {"de", "Teil"}, {"de", "Band"}, {"de", "Akt"}, {"de", "Artikel"}, {"de", "Weltkrieg"},
    {"fr", "chapitre"}, {"fr", "Chapitre"}, {"fr", "partie"}, {"fr", "tome"}, {"fr", "Tome"}, {"fr", "acte"},
    {"fr", "article"},
    {"es", "capítulo"}, {"es", "Capítulo"}, {"es", "parte"}, {"es", "tomo"}, {"es", "acto"}, {"es", "artículo"},
    {"it", "capitolo"}, {"it", "Capitolo"}, {"it", "parte"}, {"it", "volume"}, {"it", "atto"}, {"it", "articolo"},
    {"pt", "capítulo"}, {"pt", "Capítulo"}, {"pt", "parte"}, {"pt", "volume"}, {"pt", "ato"}, {"pt", "artigo"},
    {"ru", "глава"}, {"ru", "Глава"}, {"ru", "часть"}, {"ru", "Часть"}, {"ru", "том"}, {"ru", "Том"},
};

/* Rulers' names (in the languages' spellings) after which a roman numeral
 * is the ruler's ordinal: men's names only, since the ordinal's gender
 * follows the name (ru "Екатерина II" is "вторая"). */
static const char *const RULERS[] = {
    "Louis", "Henry", "Elizabeth", "George", "Charles", "Edward", "William", "James", "Richard", "Philip",
    "Frederick", "Napoleon", "Alexander", "Nicholas", "Peter", "Catherine", "Mary", "John", "Paul", "Pius",
    "Benedict", "Leo", "Gregory", "Innocent", "Clement", "Urban", "Boniface", "Victor", "Emmanuel", "Emanuele",
    "Ludwig", "Heinrich", "Karl", "Friedrich", "Wilhelm", "Otto", "Maximilian", "Franz", "Johannes", "Benedikt",
    "Henri", "Philippe", "Jean", "Léon", "Jean-Paul", "Napoléon",
    "Luis", "Felipe", "Carlos", "Alfonso", "Fernando", "Juan", "Pablo", "Benedicto",
    "Luigi", "Vittorio", "Umberto", "Carlo", "Filippo", "Enrico", "Giovanni", "Paolo", "Benedetto", "Pio",
    "Pedro", "João", "Manuel", "Afonso", "Sebastião", "Luís", "Bento", "François",
    "Пётр", "Петр", "Николай", "Александр", "Иван", "Павел",
};

static int letter_at(const char *s, size_t n) {
    if (!n) return 0;
    uint32_t c;
    if ((unsigned char)s[0] < 0x80) c = (unsigned char)s[0];
    else if (qtts_utf8_check(s, n < 4 ? n : 4) == 0) return 0;
    else qtts_utf8_decode(s, &c);
    return u_isalpha((UChar32)c) || c == '.';
}

const qtts_norm_abbrev *qtts_norm_abbrev_match(const char *lang, const char *s, size_t n, size_t *len) {
    for (size_t i = 0; i < sizeof ABBREVS / sizeof ABBREVS[0]; i++) {
        const qtts_norm_abbrev *a = &ABBREVS[i];
        size_t k = strlen(a->written);
        if (strcmp(a->lang, lang) || k > n || memcmp(s, a->written, k) || letter_at(s + k, n - k)) continue;
        if (a->when == QTTS_ABBR_BEFORE_NAME || a->when == QTTS_ABBR_BEFORE_NUMBER) { /* one space, then a capital or a digit */
            if (k + 1 >= n || s[k] != ' ') continue;
            unsigned char c = (unsigned char)s[k + 1];
            uint32_t cp = c;
            if (c >= 0x80 && qtts_utf8_check(s + k + 1, n - k - 1 < 4 ? n - k - 1 : 4) != 0) qtts_utf8_decode(s + k + 1, &cp);
            if (a->when == QTTS_ABBR_BEFORE_NAME ? !u_isupper((UChar32)cp) : !(c >= '0' && c <= '9')) continue;
        }
        *len = k;
        return a;
    }
    return NULL;
}

int qtts_norm_roman_context(const char *lang, const char *s, size_t n) {
    for (size_t i = 0; i < sizeof TITLES / sizeof TITLES[0]; i++)
        if (!strcmp(TITLES[i].lang, lang) && strlen(TITLES[i].word) == n && !memcmp(TITLES[i].word, s, n)) return 1;
    for (size_t i = 0; i < sizeof RULERS / sizeof RULERS[0]; i++)
        if (strlen(RULERS[i]) == n && !memcmp(RULERS[i], s, n)) return 2;
    return 0;
}
