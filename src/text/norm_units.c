/* Units and currencies (see norm_units.h). */
#include "text/norm_units.h"

#include <string.h>

#include "text/utf8.h"

/* What is written -> the table's key (aliases included). Longest first
 * within a shared prefix is not needed: qtts_norm_unit_match takes the
 * longest that fits. */
static const char *const WRITTEN[][2] = {
    {"km/h", "km/h"}, {"km", "km"},   {"cm", "cm"},   {"mm", "mm"}, {"m", "m"},     {"kg", "kg"},   {"mg", "mg"},
    {"g", "g"},       {"ml", "ml"},   {"l", "l"},     {"°C", "°C"}, {"°F", "°F"},   {"℃", "°C"},    {"GB", "GB"},
    {"MB", "MB"},     {"TB", "TB"},   {"KB", "KB"},   {"kB", "KB"}, {"GHz", "GHz"}, {"MHz", "MHz"}, {"Hz", "Hz"},
    {"kW", "kW"},     {"mph", "mph"}, {"ms", "ms"},
};

static const qtts_norm_unit UNITS[] = {
    /* en: CLDR plurals one/other */
    {"km", "en", "kilometer", 0, 0, "kilometers"}, {"m", "en", "meter", 0, 0, "meters"},
    {"cm", "en", "centimeter", 0, 0, "centimeters"}, {"mm", "en", "millimeter", 0, 0, "millimeters"},
    {"kg", "en", "kilogram", 0, 0, "kilograms"}, {"g", "en", "gram", 0, 0, "grams"},
    {"mg", "en", "milligram", 0, 0, "milligrams"}, {"l", "en", "liter", 0, 0, "liters"},
    {"ml", "en", "milliliter", 0, 0, "milliliters"}, {"°C", "en", "degree Celsius", 0, 0, "degrees Celsius"},
    {"°F", "en", "degree Fahrenheit", 0, 0, "degrees Fahrenheit"},
    {"km/h", "en", "kilometer per hour", 0, 0, "kilometers per hour"},
    {"mph", "en", "mile per hour", 0, 0, "miles per hour"}, {"GB", "en", "gigabyte", 0, 0, "gigabytes"},
    {"MB", "en", "megabyte", 0, 0, "megabytes"}, {"TB", "en", "terabyte", 0, 0, "terabytes"},
    {"KB", "en", "kilobyte", 0, 0, "kilobytes"}, {"GHz", "en", "gigahertz", 0, 0, "gigahertz"},
    {"MHz", "en", "megahertz", 0, 0, "megahertz"}, {"Hz", "en", "hertz", 0, 0, "hertz"},
    {"kW", "en", "kilowatt", 0, 0, "kilowatts"}, {"ms", "en", "millisecond", 0, 0, "milliseconds"},
    {"USD", "en", "dollar", 0, 0, "dollars"}, {"EUR", "en", "euro", 0, 0, "euros"},
    {"GBP", "en", "pound", 0, 0, "pounds"}, {"JPY", "en", "yen", 0, 0, "yen"}, {"CNY", "en", "yuan", 0, 0, "yuan"},
    {"KRW", "en", "won", 0, 0, "won"}, {"RUB", "en", "ruble", 0, 0, "rubles"},
    /* de: one/other; most units do not change */
    {"km", "de", "Kilometer", 0, 0, "Kilometer"}, {"m", "de", "Meter", 0, 0, "Meter"},
    {"cm", "de", "Zentimeter", 0, 0, "Zentimeter"}, {"mm", "de", "Millimeter", 0, 0, "Millimeter"},
    {"kg", "de", "Kilogramm", 0, 0, "Kilogramm"}, {"g", "de", "Gramm", 0, 0, "Gramm"},
    {"mg", "de", "Milligramm", 0, 0, "Milligramm"}, {"l", "de", "Liter", 0, 0, "Liter"},
    {"ml", "de", "Milliliter", 0, 0, "Milliliter"}, {"°C", "de", "Grad Celsius", 0, 0, "Grad Celsius"},
    {"°F", "de", "Grad Fahrenheit", 0, 0, "Grad Fahrenheit"},
    {"km/h", "de", "Kilometer pro Stunde", 0, 0, "Kilometer pro Stunde"},
    {"mph", "de", "Meile pro Stunde", 0, 0, "Meilen pro Stunde"}, {"GB", "de", "Gigabyte", 0, 0, "Gigabyte"},
    {"MB", "de", "Megabyte", 0, 0, "Megabyte"}, {"TB", "de", "Terabyte", 0, 0, "Terabyte"},
    {"KB", "de", "Kilobyte", 0, 0, "Kilobyte"}, {"GHz", "de", "Gigahertz", 0, 0, "Gigahertz"},
    {"MHz", "de", "Megahertz", 0, 0, "Megahertz"}, {"Hz", "de", "Hertz", 0, 0, "Hertz"},
    {"kW", "de", "Kilowatt", 0, 0, "Kilowatt"}, {"ms", "de", "Millisekunde", 0, 0, "Millisekunden"},
    {"USD", "de", "Dollar", 0, 0, "Dollar"}, {"EUR", "de", "Euro", 0, 0, "Euro"}, {"GBP", "de", "Pfund", 0, 0, "Pfund"},
    {"JPY", "de", "Yen", 0, 0, "Yen"}, {"CNY", "de", "Yuan", 0, 0, "Yuan"}, {"KRW", "de", "Won", 0, 0, "Won"},
    {"RUB", "de", "Rubel", 0, 0, "Rubel"},
    /* fr: one (0 and 1) / many (millions) / other */
    {"km", "fr", "kilomètre", 0, 0, "kilomètres"}, {"m", "fr", "mètre", 0, 0, "mètres"},
    {"cm", "fr", "centimètre", 0, 0, "centimètres"}, {"mm", "fr", "millimètre", 0, 0, "millimètres"},
    {"kg", "fr", "kilogramme", 0, 0, "kilogrammes"}, {"g", "fr", "gramme", 0, 0, "grammes"},
    {"mg", "fr", "milligramme", 0, 0, "milligrammes"}, {"l", "fr", "litre", 0, 0, "litres"},
    {"ml", "fr", "millilitre", 0, 0, "millilitres"}, {"°C", "fr", "degré Celsius", 0, 0, "degrés Celsius"},
    {"°F", "fr", "degré Fahrenheit", 0, 0, "degrés Fahrenheit"},
    {"km/h", "fr", "kilomètre par heure", 0, 0, "kilomètres par heure"},
    {"mph", "fr", "mille par heure", 0, 0, "milles par heure"}, {"GB", "fr", "gigaoctet", 0, 0, "gigaoctets"},
    {"MB", "fr", "mégaoctet", 0, 0, "mégaoctets"}, {"TB", "fr", "téraoctet", 0, 0, "téraoctets"},
    {"KB", "fr", "kilooctet", 0, 0, "kilooctets"}, {"GHz", "fr", "gigahertz", 0, 0, "gigahertz"},
    {"MHz", "fr", "mégahertz", 0, 0, "mégahertz"}, {"Hz", "fr", "hertz", 0, 0, "hertz"},
    {"kW", "fr", "kilowatt", 0, 0, "kilowatts"}, {"ms", "fr", "milliseconde", 0, 0, "millisecondes"},
    {"USD", "fr", "dollar", 0, "de dollars", "dollars"}, {"EUR", "fr", "euro", 0, "d'euros", "euros"},
    {"GBP", "fr", "livre", 0, "de livres", "livres"}, {"JPY", "fr", "yen", 0, "de yens", "yens"},
    {"CNY", "fr", "yuan", 0, "de yuans", "yuans"}, {"KRW", "fr", "won", 0, "de wons", "wons"},
    {"RUB", "fr", "rouble", 0, "de roubles", "roubles"},
    /* es, it, pt: one/many/other */
    {"km", "es", "kilómetro", 0, 0, "kilómetros"}, {"m", "es", "metro", 0, 0, "metros"},
    {"cm", "es", "centímetro", 0, 0, "centímetros"}, {"mm", "es", "milímetro", 0, 0, "milímetros"},
    {"kg", "es", "kilogramo", 0, 0, "kilogramos"}, {"g", "es", "gramo", 0, 0, "gramos"},
    {"mg", "es", "miligramo", 0, 0, "miligramos"}, {"l", "es", "litro", 0, 0, "litros"},
    {"ml", "es", "mililitro", 0, 0, "mililitros"}, {"°C", "es", "grado Celsius", 0, 0, "grados Celsius"},
    {"°F", "es", "grado Fahrenheit", 0, 0, "grados Fahrenheit"},
    {"km/h", "es", "kilómetro por hora", 0, 0, "kilómetros por hora"},
    {"mph", "es", "milla por hora", 0, 0, "millas por hora"}, {"GB", "es", "gigabyte", 0, 0, "gigabytes"},
    {"MB", "es", "megabyte", 0, 0, "megabytes"}, {"TB", "es", "terabyte", 0, 0, "terabytes"},
    {"KB", "es", "kilobyte", 0, 0, "kilobytes"}, {"GHz", "es", "gigahercio", 0, 0, "gigahercios"},
    {"MHz", "es", "megahercio", 0, 0, "megahercios"}, {"Hz", "es", "hercio", 0, 0, "hercios"},
    {"kW", "es", "kilovatio", 0, 0, "kilovatios"}, {"ms", "es", "milisegundo", 0, 0, "milisegundos"},
    {"USD", "es", "dólar", 0, "de dólares", "dólares"}, {"EUR", "es", "euro", 0, "de euros", "euros"},
    {"GBP", "es", "libra", 0, "de libras", "libras"}, {"JPY", "es", "yen", 0, "de yenes", "yenes"},
    {"CNY", "es", "yuan", 0, "de yuanes", "yuanes"}, {"KRW", "es", "won", 0, "de wones", "wones"},
    {"RUB", "es", "rublo", 0, "de rublos", "rublos"},
    {"km", "it", "chilometro", 0, 0, "chilometri"}, {"m", "it", "metro", 0, 0, "metri"},
    {"cm", "it", "centimetro", 0, 0, "centimetri"}, {"mm", "it", "millimetro", 0, 0, "millimetri"},
    {"kg", "it", "chilogrammo", 0, 0, "chilogrammi"}, {"g", "it", "grammo", 0, 0, "grammi"},
    {"mg", "it", "milligrammo", 0, 0, "milligrammi"}, {"l", "it", "litro", 0, 0, "litri"},
    {"ml", "it", "millilitro", 0, 0, "millilitri"}, {"°C", "it", "grado Celsius", 0, 0, "gradi Celsius"},
    {"°F", "it", "grado Fahrenheit", 0, 0, "gradi Fahrenheit"},
    {"km/h", "it", "chilometro orario", 0, 0, "chilometri orari"},
    {"mph", "it", "miglio orario", 0, 0, "miglia orarie"}, {"GB", "it", "gigabyte", 0, 0, "gigabyte"},
    {"MB", "it", "megabyte", 0, 0, "megabyte"}, {"TB", "it", "terabyte", 0, 0, "terabyte"},
    {"KB", "it", "kilobyte", 0, 0, "kilobyte"}, {"GHz", "it", "gigahertz", 0, 0, "gigahertz"},
    {"MHz", "it", "megahertz", 0, 0, "megahertz"}, {"Hz", "it", "hertz", 0, 0, "hertz"},
    {"kW", "it", "chilowatt", 0, 0, "chilowatt"}, {"ms", "it", "millisecondo", 0, 0, "millisecondi"},
    {"USD", "it", "dollaro", 0, "di dollari", "dollari"}, {"EUR", "it", "euro", 0, "di euro", "euro"},
    {"GBP", "it", "sterlina", 0, "di sterline", "sterline"}, {"JPY", "it", "yen", 0, "di yen", "yen"},
    {"CNY", "it", "yuan", 0, "di yuan", "yuan"}, {"KRW", "it", "won", 0, "di won", "won"},
    {"RUB", "it", "rublo", 0, "di rubli", "rubli"},
    {"km", "pt", "quilômetro", 0, 0, "quilômetros"}, {"m", "pt", "metro", 0, 0, "metros"},
    {"cm", "pt", "centímetro", 0, 0, "centímetros"}, {"mm", "pt", "milímetro", 0, 0, "milímetros"},
    {"kg", "pt", "quilograma", 0, 0, "quilogramas"}, {"g", "pt", "grama", 0, 0, "gramas"},
    {"mg", "pt", "miligrama", 0, 0, "miligramas"}, {"l", "pt", "litro", 0, 0, "litros"},
    {"ml", "pt", "mililitro", 0, 0, "mililitros"}, {"°C", "pt", "grau Celsius", 0, 0, "graus Celsius"},
    {"°F", "pt", "grau Fahrenheit", 0, 0, "graus Fahrenheit"},
    {"km/h", "pt", "quilômetro por hora", 0, 0, "quilômetros por hora"},
    {"mph", "pt", "milha por hora", 0, 0, "milhas por hora"}, {"GB", "pt", "gigabyte", 0, 0, "gigabytes"},
    {"MB", "pt", "megabyte", 0, 0, "megabytes"}, {"TB", "pt", "terabyte", 0, 0, "terabytes"},
    {"KB", "pt", "kilobyte", 0, 0, "kilobytes"}, {"GHz", "pt", "gigahertz", 0, 0, "gigahertz"},
    {"MHz", "pt", "megahertz", 0, 0, "megahertz"}, {"Hz", "pt", "hertz", 0, 0, "hertz"},
    {"kW", "pt", "quilowatt", 0, 0, "quilowatts"}, {"ms", "pt", "milissegundo", 0, 0, "milissegundos"},
    {"USD", "pt", "dólar", 0, "de dólares", "dólares"}, {"EUR", "pt", "euro", 0, "de euros", "euros"},
    {"GBP", "pt", "libra", 0, "de libras", "libras"}, {"JPY", "pt", "iene", 0, "de ienes", "ienes"},
    {"CNY", "pt", "yuan", 0, "de yuans", "yuans"}, {"KRW", "pt", "won", 0, "de wons", "wons"},
    {"RUB", "pt", "rublo", 0, "de rublos", "rublos"},
    /* ru: one/few/many/other (other: fractions, which take the genitive singular) */
    {"km", "ru", "километр", "километра", "километров", "километра"},
    {"m", "ru", "метр", "метра", "метров", "метра"},
    {"cm", "ru", "сантиметр", "сантиметра", "сантиметров", "сантиметра"},
    {"mm", "ru", "миллиметр", "миллиметра", "миллиметров", "миллиметра"},
    {"kg", "ru", "килограмм", "килограмма", "килограммов", "килограмма"},
    {"g", "ru", "грамм", "грамма", "граммов", "грамма"},
    {"mg", "ru", "миллиграмм", "миллиграмма", "миллиграммов", "миллиграмма"},
    {"l", "ru", "литр", "литра", "литров", "литра"},
    {"ml", "ru", "миллилитр", "миллилитра", "миллилитров", "миллилитра"},
    {"°C", "ru", "градус Цельсия", "градуса Цельсия", "градусов Цельсия", "градуса Цельсия"},
    {"°F", "ru", "градус Фаренгейта", "градуса Фаренгейта", "градусов Фаренгейта", "градуса Фаренгейта"},
    {"km/h", "ru", "километр в час", "километра в час", "километров в час", "километра в час"},
    {"mph", "ru", "миля в час", "мили в час", "миль в час", "мили в час"},
    {"GB", "ru", "гигабайт", "гигабайта", "гигабайт", "гигабайта"},
    {"MB", "ru", "мегабайт", "мегабайта", "мегабайт", "мегабайта"},
    {"TB", "ru", "терабайт", "терабайта", "терабайт", "терабайта"},
    {"KB", "ru", "килобайт", "килобайта", "килобайт", "килобайта"},
    {"GHz", "ru", "гигагерц", "гигагерца", "гигагерц", "гигагерца"},
    {"MHz", "ru", "мегагерц", "мегагерца", "мегагерц", "мегагерца"},
    {"Hz", "ru", "герц", "герца", "герц", "герца"},
    {"kW", "ru", "киловатт", "киловатта", "киловатт", "киловатта"},
    {"ms", "ru", "миллисекунда", "миллисекунды", "миллисекунд", "миллисекунды"},
    {"USD", "ru", "доллар", "доллара", "долларов", "доллара"}, {"EUR", "ru", "евро", 0, 0, "евро"},
    {"GBP", "ru", "фунт", "фунта", "фунтов", "фунта"}, {"JPY", "ru", "иена", "иены", "иен", "иены"},
    {"CNY", "ru", "юань", "юаня", "юаней", "юаня"}, {"KRW", "ru", "вона", "воны", "вон", "воны"},
    {"RUB", "ru", "рубль", "рубля", "рублей", "рубля"},
    /* zh, ja, ko: no plural forms */
    {"km", "zh", 0, 0, 0, "公里"}, {"m", "zh", 0, 0, 0, "米"}, {"cm", "zh", 0, 0, 0, "厘米"},
    {"mm", "zh", 0, 0, 0, "毫米"}, {"kg", "zh", 0, 0, 0, "千克"}, {"g", "zh", 0, 0, 0, "克"},
    {"mg", "zh", 0, 0, 0, "毫克"}, {"l", "zh", 0, 0, 0, "升"}, {"ml", "zh", 0, 0, 0, "毫升"},
    {"°C", "zh", 0, 0, 0, "摄氏度"}, {"°F", "zh", 0, 0, 0, "华氏度"}, {"km/h", "zh", 0, 0, 0, "公里每小时"},
    {"mph", "zh", 0, 0, 0, "英里每小时"}, {"GB", "zh", 0, 0, 0, "GB"}, {"MB", "zh", 0, 0, 0, "MB"},
    {"TB", "zh", 0, 0, 0, "TB"}, {"KB", "zh", 0, 0, 0, "KB"}, {"GHz", "zh", 0, 0, 0, "吉赫"},
    {"MHz", "zh", 0, 0, 0, "兆赫"}, {"Hz", "zh", 0, 0, 0, "赫兹"}, {"kW", "zh", 0, 0, 0, "千瓦"},
    {"ms", "zh", 0, 0, 0, "毫秒"}, {"USD", "zh", 0, 0, 0, "美元"}, {"EUR", "zh", 0, 0, 0, "欧元"},
    {"GBP", "zh", 0, 0, 0, "英镑"}, {"JPY", "zh", 0, 0, 0, "日元"}, {"CNY", "zh", 0, 0, 0, "元"},
    {"KRW", "zh", 0, 0, 0, "韩元"}, {"RUB", "zh", 0, 0, 0, "卢布"},
    {"km", "ja", 0, 0, 0, "キロメートル"}, {"m", "ja", 0, 0, 0, "メートル"}, {"cm", "ja", 0, 0, 0, "センチメートル"},
    {"mm", "ja", 0, 0, 0, "ミリメートル"}, {"kg", "ja", 0, 0, 0, "キログラム"}, {"g", "ja", 0, 0, 0, "グラム"},
    {"mg", "ja", 0, 0, 0, "ミリグラム"}, {"l", "ja", 0, 0, 0, "リットル"}, {"ml", "ja", 0, 0, 0, "ミリリットル"},
    {"°C", "ja", 0, 0, 0, "度"}, {"°F", "ja", 0, 0, 0, "華氏度"}, {"km/h", "ja", 0, 0, 0, "キロメートル毎時"},
    {"mph", "ja", 0, 0, 0, "マイル毎時"}, {"GB", "ja", 0, 0, 0, "ギガバイト"}, {"MB", "ja", 0, 0, 0, "メガバイト"},
    {"TB", "ja", 0, 0, 0, "テラバイト"}, {"KB", "ja", 0, 0, 0, "キロバイト"}, {"GHz", "ja", 0, 0, 0, "ギガヘルツ"},
    {"MHz", "ja", 0, 0, 0, "メガヘルツ"}, {"Hz", "ja", 0, 0, 0, "ヘルツ"}, {"kW", "ja", 0, 0, 0, "キロワット"},
    {"ms", "ja", 0, 0, 0, "ミリ秒"}, {"USD", "ja", 0, 0, 0, "ドル"}, {"EUR", "ja", 0, 0, 0, "ユーロ"},
    {"GBP", "ja", 0, 0, 0, "ポンド"}, {"JPY", "ja", 0, 0, 0, "円"}, {"CNY", "ja", 0, 0, 0, "人民元"},
    {"KRW", "ja", 0, 0, 0, "ウォン"}, {"RUB", "ja", 0, 0, 0, "ルーブル"},
    {"km", "ko", 0, 0, 0, "킬로미터"}, {"m", "ko", 0, 0, 0, "미터"}, {"cm", "ko", 0, 0, 0, "센티미터"},
    {"mm", "ko", 0, 0, 0, "밀리미터"}, {"kg", "ko", 0, 0, 0, "킬로그램"}, {"g", "ko", 0, 0, 0, "그램"},
    {"mg", "ko", 0, 0, 0, "밀리그램"}, {"l", "ko", 0, 0, 0, "리터"}, {"ml", "ko", 0, 0, 0, "밀리리터"},
    {"°C", "ko", 0, 0, 0, "도"}, {"°F", "ko", 0, 0, 0, "화씨 도"}, {"km/h", "ko", 0, 0, 0, "킬로미터 매시"},
    {"mph", "ko", 0, 0, 0, "마일 매시"}, {"GB", "ko", 0, 0, 0, "기가바이트"}, {"MB", "ko", 0, 0, 0, "메가바이트"},
    {"TB", "ko", 0, 0, 0, "테라바이트"}, {"KB", "ko", 0, 0, 0, "킬로바이트"}, {"GHz", "ko", 0, 0, 0, "기가헤르츠"},
    {"MHz", "ko", 0, 0, 0, "메가헤르츠"}, {"Hz", "ko", 0, 0, 0, "헤르츠"}, {"kW", "ko", 0, 0, 0, "킬로와트"},
    {"ms", "ko", 0, 0, 0, "밀리초"}, {"USD", "ko", 0, 0, 0, "달러"}, {"EUR", "ko", 0, 0, 0, "유로"},
    {"GBP", "ko", 0, 0, 0, "파운드"}, {"JPY", "ko", 0, 0, 0, "엔"}, {"CNY", "ko", 0, 0, 0, "위안"},
    {"KRW", "ko", 0, 0, 0, "원"}, {"RUB", "ko", 0, 0, 0, "루블"},
};

static const char *const CURRENCY_SIGNS[][2] = {
    {"$", "USD"}, {"€", "EUR"}, {"£", "GBP"}, {"¥", "JPY"}, {"₩", "KRW"}, {"₽", "RUB"},
    {"USD", "USD"}, {"EUR", "EUR"}, {"GBP", "GBP"}, {"JPY", "JPY"}, {"CNY", "CNY"}, {"RMB", "CNY"},
    {"KRW", "KRW"}, {"RUB", "RUB"},
};

const qtts_norm_unit *qtts_norm_unit_find(const char *unit, const char *lang) {
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
        if (!strcmp(UNITS[i].unit, unit) && !strcmp(UNITS[i].lang, lang)) return &UNITS[i];
    return NULL;
}

const char *qtts_norm_unit_word(const qtts_norm_unit *u, const char *cat) {
    const char *w = NULL;
    if (!strcmp(cat, "one")) w = u->one;
    else if (!strcmp(cat, "few")) w = u->few;
    else if (!strcmp(cat, "many")) w = u->many;
    return w ? w : u->other;
}

/* A letter or digit right after a match makes it part of a longer word. */
static int word_continues(const char *s, size_t n) {
    if (!n) return 0;
    unsigned char c = (unsigned char)s[0];
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    uint32_t cp;
    if (qtts_utf8_check(s, n < 4 ? n : 4) == 0) return 0;
    qtts_utf8_decode(s, &cp);
    /* Latin, Greek, Cyrillic letters continue a word; CJK after a unit does not ("5km的") */
    return cp < 0x2E80 && !qtts_unicode_is_space(cp) && !(cp >= 0x2000 && cp < 0x2070);
}

static int is_letter_byte(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static const char *longest(const char *const (*table)[2], size_t rows, const char *s, size_t n, size_t *len) {
    const char *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < rows; i++) {
        size_t k = strlen(table[i][0]);
        if (k <= n && k > best_len && !memcmp(s, table[i][0], k) &&
            !(is_letter_byte(table[i][0][k - 1]) && word_continues(s + k, n - k)))
            best = table[i][1], best_len = k;
    }
    *len = best_len;
    return best;
}

const char *qtts_norm_unit_match(const char *s, size_t n, size_t *len) {
    return longest(WRITTEN, sizeof WRITTEN / sizeof WRITTEN[0], s, n, len);
}

const char *qtts_norm_currency_match(const char *s, size_t n, const char *lang, size_t *len) {
    const char *c = longest(CURRENCY_SIGNS, sizeof CURRENCY_SIGNS / sizeof CURRENCY_SIGNS[0], s, n, len);
    if (c && !strcmp(c, "JPY") && *len == 2 && !strcmp(lang, "zh")) c = "CNY"; /* ¥ in Chinese text: yuan */
    return c;
}
