/* qtts normalize [--lang L] [--mode M] [TEXT]: prints what the model will
 * read for TEXT (or all of stdin) after the text front end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "io/file.h"
#include "text/lexicon.h"
#include "text/normalize.h"
#include "voices/voice_files.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: qtts normalize [--lang L] [--mode off|basic|full] [--lexicon FILE] [--code-blocks skip|read]\n"
            "                      [--voice NAME [--voices-dir DIR]] [TEXT]\n"
            "\n"
            "Prints TEXT (or all of stdin when TEXT is absent) as the model will read it:\n"
            "markdown, emoji and URLs cleaned up, numbers, money, units, times and dates in\n"
            "words of the language.\n"
            "\n"
            "  --lang L     zh, en, ja, ko, de, fr, ru, pt, es, it (or the model's names:\n"
            "               English, ...), or auto (default: guessed from the text)\n"
            "  --mode M     off (unchanged), basic (cleanup only) or full (default)\n"
            "  --lexicon F  pronunciation lexicon: written<TAB>spoken[<TAB>lang] per line,\n"
            "               applied first (docs/text.md)\n"
            "  --voice NAME a registered voice: its NAME.lexicon in the voices directory\n"
            "               (--voices-dir DIR or $QTTS_VOICES_DIR) applies over --lexicon\n"
            "  --code-blocks skip (default: fenced code is not read) or read (its lines as text)\n"
            "  -h, --help   this help\n");
}

int cmd_normalize(int argc, char **argv) {
    const char *lang = "auto", *text = NULL, *lexicon_path = NULL, *voice = NULL, *voices_dir = NULL;
    int mode = QTTS_NORM_FULL, read_code = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "--lang") || !strcmp(a, "-l")) && i + 1 < argc) {
            lang = argv[++i];
        } else if (!strcmp(a, "--code-blocks") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "skip") && strcmp(v, "read")) {
                cli_error("normalize: --code-blocks takes skip or read, not \"%s\"", v);
                return CLI_USAGE;
            }
            read_code = !strcmp(v, "read");
        } else if (!strcmp(a, "--lexicon") && i + 1 < argc) {
            lexicon_path = argv[++i];
        } else if (!strcmp(a, "--voice") && i + 1 < argc) {
            voice = argv[++i];
        } else if (!strcmp(a, "--voices-dir") && i + 1 < argc) {
            voices_dir = argv[++i];
        } else if (!strcmp(a, "--mode") && i + 1 < argc) {
            mode = qtts_norm_mode_parse(argv[++i]);
            if (mode < 0) {
                cli_error("normalize: --mode takes off, basic or full, not \"%s\"", argv[i]);
                return CLI_USAGE;
            }
        } else if (a[0] == '-' && a[1]) {
            cli_error("normalize: unknown option %s (or it needs a value)", a);
            usage(stderr);
            return CLI_USAGE;
        } else if (!text) {
            text = a;
        } else {
            cli_error("normalize: one TEXT only (quote it)");
            return CLI_USAGE;
        }
    }
    char *owned = NULL;
    size_t len = 0;
    qtts_err err = {0};
    qtts_lexicon *lex = NULL;
    if (lexicon_path && !(lex = qtts_lexicon_load_file(lexicon_path, &err))) {
        cli_error("normalize: --lexicon: %s", err.msg);
        return CLI_FAIL;
    }
    if (voice) { /* the registered voice's lexicon over --lexicon, as a request with it gets */
        const char *dir = cli_voices_dir(voices_dir);
        struct stat st;
        if (!dir || !srv_voice_name_ok(voice) || srv_voice_files_stat(dir, voice, &st) != 0) {
            cli_error("normalize: --voice %.80s: no such registered voice%s%s", voice, dir ? " in " : "",
                      dir ? dir : " (no --voices-dir DIR or $QTTS_VOICES_DIR)");
            qtts_lexicon_release(lex);
            return CLI_FAIL;
        }
        qtts_lexicon *merged = NULL;
        char warn[600];
        int rc = srv_voice_files_request_lexicon(dir, voice, lex, &merged, warn, sizeof warn);
        qtts_lexicon_release(lex);
        if (rc) {
            cli_error("normalize: %s", warn);
            return CLI_FAIL;
        }
        if (warn[0]) fprintf(stderr, "qtts: warning: voice '%s': lexicon not used: %s\n", voice, warn);
        lex = merged;
    }
    if (!text) {
        if (qtts_read_stream(stdin, "standard input", (size_t)1 << 26, &owned, &len, &err)) {
            cli_error("normalize: %s", err.msg);
            qtts_lexicon_release(lex);
            return CLI_FAIL;
        }
        text = owned;
    } else {
        len = strlen(text);
    }
    size_t out_len = 0;
    qtts_norm_opts opts = {.lexicon = lex, .read_code = read_code};
    char *out = qtts_text_normalize_opts(text, len, lang, (qtts_norm_mode)mode, &opts, &out_len, &err);
    free(owned);
    qtts_lexicon_release(lex);
    if (!out) {
        cli_error("normalize: %s", err.msg);
        return CLI_FAIL;
    }
    fwrite(out, 1, out_len, stdout);
    putchar('\n');
    free(out);
    return CLI_OK;
}
