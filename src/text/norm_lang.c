/* The per-language rows of the text front end (see norm_lang.h). Number
 * words come from ICU (CLDR spellout rules); these are the words CLDR has no
 * rule for: symbols, templates of percentages, ranges, dates and times. */
#include "text/norm_lang.h"

#include <stddef.h>
#include <strings.h>

static const qtts_norm_lang LANGS[] = {
    {.code = "en", .locale = "en", .spaced = 1, .decimal = '.', .group = ',', .full_stop = ".", .list_sep = ", ",
     .w_and = "and", .w_plus = "plus", .w_equals = "equals", .w_at = "at", .w_hash = "number", .w_slash = "slash",
     .w_dot = "dot", .w_minus = "minus", .percent = "{0} percent", .range = "{0} to {1}", .fraction = "{0} over {1}",
     .rs_cardinal = "%spellout-numbering", .rs_year = "%spellout-numbering-year", .rs_ordinal = "%spellout-ordinal",
     .rs_day = "%spellout-ordinal", .rs_hour = "%spellout-numbering", .year_words = 1, .date = "{1} {0}, {2}",
     .month_first = 1, .time_hm = "{0} {1}", .time_h0 = "{0} o'clock", .time_hm_leading_zero = "{0} oh {1}",
     .am = "a m", .pm = "p m", .regnal = "the {0}", .regnal_ordinal_max = 1000},
    {.code = "zh", .locale = "zh", .spaced = 0, .decimal = '.', .group = ',', .full_stop = "。", .list_sep = "，",
     .w_and = "和", .w_plus = "加", .w_equals = "等于", .w_at = "at", .w_hash = "井号", .w_slash = "斜杠",
     .w_dot = "点", .w_minus = "减", .percent = "百分之{0}", .range = "{0}到{1}", .fraction = "{1}分之{0}",
     .rs_cardinal = "%spellout-numbering", .rs_year = "%spellout-numbering-year", .rs_ordinal = "%spellout-ordinal",
     .rs_day = "%spellout-numbering", .rs_hour = "%spellout-numbering", .date = "{2}年{1}月{0}日",
     .month_numeric = 1, .time_hm = "{0}点{1}分", .time_h0 = "{0}点", .time_hm_leading_zero = "{0}点零{1}分"},
    {.code = "ja", .locale = "ja", .spaced = 0, .decimal = '.', .group = ',', .full_stop = "。", .list_sep = "、",
     .w_and = "アンド", .w_plus = "プラス", .w_equals = "イコール", .w_at = "アット", .w_hash = "シャープ",
     .w_slash = "スラッシュ", .w_dot = "ドット", .w_minus = "マイナス", .percent = "{0}パーセント",
     .range = "{0}から{1}", .fraction = "{1}分の{0}", .rs_cardinal = "%spellout-numbering",
     .rs_year = "%spellout-numbering", .rs_ordinal = "%spellout-ordinal", .rs_day = "%spellout-numbering",
     .rs_hour = "%spellout-numbering", .date = "{2}年{1}月{0}日", .month_numeric = 1, .time_hm = "{0}時{1}分",
     .time_h0 = "{0}時"},
    {.code = "ko", .locale = "ko", .spaced = 1, .decimal = '.', .group = ',', .full_stop = ".", .list_sep = ", ",
     .w_and = "앤드", .w_plus = "더하기", .w_equals = "는", .w_at = "골뱅이", .w_hash = "샵", .w_slash = "슬래시",
     .w_dot = "닷", .w_minus = "빼기", .percent = "{0} 퍼센트", .range = "{0}에서 {1}", .fraction = "{1}분의 {0}",
     .rs_cardinal = "%spellout-numbering", .rs_year = "%spellout-numbering", .rs_ordinal = "%spellout-ordinal-native",
     .rs_day = "%spellout-numbering", .rs_hour = "%spellout-cardinal-native-attributive", .date = "{2}년 {1} {0}일",
     .months = {"일월", "이월", "삼월", "사월", "오월", "유월", "칠월", "팔월", "구월", "시월", "십일월", "십이월"},
     .time_hm = "{0} 시 {1} 분", .time_h0 = "{0} 시"},
    {.code = "de", .locale = "de", .rs_count = "%spellout-cardinal-masculine", .spaced = 1, .decimal = ',', .group = '.', .full_stop = ".", .list_sep = ", ",
     .w_and = "und", .w_plus = "plus", .w_equals = "gleich", .w_at = "at", .w_hash = "Raute", .w_slash = "Schrägstrich",
     .w_dot = "Punkt", .w_minus = "minus", .percent = "{0} Prozent", .range = "{0} bis {1}", .fraction = "{0} durch {1}",
     .rs_cardinal = "%spellout-numbering", .rs_year = "%spellout-numbering-year", .rs_ordinal = "%spellout-ordinal",
     .rs_day = "%spellout-ordinal-r", .rs_hour = "%spellout-cardinal-feminine", .year_words = 1, .date = "{0} {1} {2}",
     .time_hm = "{0} Uhr {1}", .time_h0 = "{0} Uhr", .time_word = "Uhr", .regnal = "der {0}", .regnal_ordinal_max = 1000},
    {.code = "fr", .locale = "fr", .rs_count = "%spellout-cardinal-masculine", .spaced = 1, .decimal = ',', .group = ' ', .full_stop = ".", .list_sep = ", ",
     .w_and = "et", .w_plus = "plus", .w_equals = "égal", .w_at = "arobase", .w_hash = "dièse",
     .w_slash = "barre oblique", .w_dot = "point", .w_minus = "moins", .percent = "{0} pour cent",
     .range = "{0} à {1}", .fraction = "{0} sur {1}", .rs_cardinal = "%spellout-numbering",
     .rs_year = "%spellout-numbering-year", .rs_ordinal = "%spellout-ordinal-masculine",
     .rs_day = "%spellout-numbering", .rs_hour = "%spellout-cardinal-feminine", .date = "{0} {1} {2}",
     .day_one = "premier", .time_hm = "{0} heures {1}", .time_h0 = "{0} heures", .hour_one = "une heure",
     .regnal = "{0}", .regnal_ordinal_max = 1},
    {.code = "ru", .locale = "ru", .spaced = 1, .decimal = ',', .group = ' ', .full_stop = ".", .list_sep = ", ",
     .w_and = "и", .w_plus = "плюс", .w_equals = "равно", .w_at = "собака", .w_hash = "решётка", .w_slash = "слэш",
     .w_dot = "точка", .w_minus = "минус", .percent = "{0} процентов", .range = "{0} — {1}",
     .fraction = "{0} из {1}", .rs_cardinal = "%spellout-numbering", .rs_year = "%spellout-numbering-year",
     .rs_ordinal = "%spellout-ordinal-masculine", .rs_day = "%spellout-ordinal-neuter",
     .rs_hour = "%spellout-numbering", .date = "{0} {1} {2} года", .time_hm = "{0} {1}", .time_h0 = "{0} ноль ноль", .time_hm_leading_zero = "{0} ноль {1}",
     .regnal = "{0}", .regnal_ordinal_max = 1000},
    {.code = "pt", .locale = "pt", .rs_count = "%spellout-cardinal-masculine", .spaced = 1, .decimal = ',', .group = '.', .full_stop = ".", .list_sep = ", ",
     .w_and = "e", .w_plus = "mais", .w_equals = "igual a", .w_at = "arroba", .w_hash = "cerquilha", .w_slash = "barra",
     .w_dot = "ponto", .w_minus = "menos", .percent = "{0} por cento", .range = "{0} a {1}",
     .fraction = "{0} sobre {1}", .rs_cardinal = "%spellout-numbering", .rs_year = "%spellout-numbering",
     .rs_ordinal = "%spellout-ordinal-masculine", .rs_day = "%spellout-numbering",
     .rs_hour = "%spellout-cardinal-feminine", .date = "{0} de {1} de {2}", .day_one = "primeiro",
     .time_hm = "{0} e {1}", .time_h0 = "{0} horas", .hour_one = "uma hora", .regnal = "{0}",
     .regnal_ordinal_max = 10},
    {.code = "es", .locale = "es", .rs_count = "%spellout-cardinal-masculine", .spaced = 1, .decimal = ',', .group = '.', .full_stop = ".", .list_sep = ", ",
     .w_and = "y", .w_plus = "más", .w_equals = "igual a", .w_at = "arroba", .w_hash = "almohadilla", .w_slash = "barra",
     .w_dot = "punto", .w_minus = "menos", .percent = "{0} por ciento", .range = "{0} a {1}",
     .fraction = "{0} entre {1}", .rs_cardinal = "%spellout-numbering", .rs_year = "%spellout-numbering",
     .rs_ordinal = "%spellout-ordinal-masculine", .rs_day = "%spellout-numbering",
     .rs_hour = "%spellout-cardinal-feminine", .date = "{0} de {1} de {2}", .time_hm = "{0} y {1}",
     .time_h0 = "{0} en punto", .regnal = "{0}", .regnal_ordinal_max = 10},
    {.code = "it", .locale = "it", .rs_count = "%spellout-cardinal-masculine", .spaced = 1, .decimal = ',', .group = '.', .full_stop = ".", .list_sep = ", ",
     .w_and = "e", .w_plus = "più", .w_equals = "uguale a", .w_at = "chiocciola", .w_hash = "cancelletto",
     .w_slash = "barra", .w_dot = "punto", .w_minus = "meno", .percent = "{0} per cento", .range = "{0} a {1}",
     .fraction = "{0} su {1}", .rs_cardinal = "%spellout-numbering", .rs_year = "%spellout-numbering",
     .rs_ordinal = "%spellout-ordinal-masculine", .rs_day = "%spellout-numbering",
     .rs_hour = "%spellout-cardinal-feminine", .date = "{0} {1} {2}", .day_one = "primo", .time_hm = "{0} e {1}",
     .time_h0 = "le {0}", .hour_one = "l'una", .regnal = "{0}", .regnal_ordinal_max = 1000},
};

#define N_LANGS ((int)(sizeof LANGS / sizeof LANGS[0]))

/* The model's language names (config.json) for the same languages. */
static const char *const NAMES[N_LANGS] = {"english", "chinese", "japanese", "korean", "german",
                                           "french",  "russian", "portuguese", "spanish", "italian"};

const qtts_norm_lang *qtts_norm_lang_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < N_LANGS; i++)
        if (!strcasecmp(name, LANGS[i].code) || !strcasecmp(name, NAMES[i])) return &LANGS[i];
    /* "en-US", "pt_BR": the language part */
    for (int i = 0; i < N_LANGS; i++)
        if (!strncasecmp(name, LANGS[i].code, 2) && (name[2] == '-' || name[2] == '_')) return &LANGS[i];
    return NULL;
}

const qtts_norm_lang *qtts_norm_lang_at(int i) { return i >= 0 && i < N_LANGS ? &LANGS[i] : NULL; }
int qtts_norm_lang_count(void) { return N_LANGS; }
