/* qtts tokenize [TEXT] -m PATH [--tokens] [--template KIND]: text -> token ids
 * with the model's Qwen2 BPE tokenizer. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_files.h"
#include "text/tokenizer.h"
#include "io/file.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: qtts tokenize [TEXT] [-m PATH] [--tokens] [--template KIND]\n"
            "\n"
            "Prints the token ids of TEXT (or of all of stdin, verbatim but for a leading byte order mark,\n"
            "when TEXT is absent) as a JSON array.\n"
            "\n"
            "  -m, --model PATH   model folder with vocab.json, merges.txt, tokenizer_config.json\n"
            "                     (default: $QTTS_MODEL)\n"
            "  --tokens           print {\"ids\": [...], \"tokens\": [...]} with each token string\n"
            "                     in vocab form (byte-level symbols, e.g. \"Ġworld\" for \" world\")\n"
            "  --template KIND    wrap TEXT in a prompt template first: target, ref or instruct\n"
            "  -h, --help         this help\n");
}

static void print_json_string(const char *s, size_t len) {
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* [ids...], or {"ids": [...], "tokens": [...]} with --tokens; one line. */
static void print_ids(const qtts_tokenizer *tok, const int32_t *ids, int n, int show_tokens) {
    if (show_tokens) fputs("{\"ids\": ", stdout);
    putchar('[');
    for (int i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
    putchar(']');
    if (show_tokens) {
        fputs(", \"tokens\": [", stdout);
        for (int i = 0; i < n; i++) {
            size_t l = 0;
            const char *s = qtts_tok_token_str(tok, ids[i], &l);
            if (i) fputs(", ", stdout);
            print_json_string(s ? s : "", s ? l : 0);
        }
        fputs("]}", stdout);
    }
    putchar('\n');
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *tmpl = NULL;
    int show_tokens = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "--template")) {
            if (i + 1 >= argc) {
                cli_error("tokenize: %s needs a value", a);
                return CLI_USAGE;
            }
            if (!strcmp(a, "--template")) tmpl = argv[++i];
            else model = argv[++i];
        } else if (!strcmp(a, "--tokens")) {
            show_tokens = 1;
        } else if (a[0] == '-' && a[1] && strcmp(a, "--")) {
            cli_error("tokenize: unknown option '%s' (see 'qtts tokenize --help')", a);
            return CLI_USAGE;
        } else {
            if (!strcmp(a, "--")) {
                if (++i >= argc) break;
                a = argv[i];
            }
            if (text) {
                cli_error("tokenize: give one TEXT argument (quote it)");
                return CLI_USAGE;
            }
            text = a;
        }
    }
    int kind = -1;
    if (tmpl) {
        if (!strcmp(tmpl, "target")) kind = QTTS_TEMPLATE_TARGET;
        else if (!strcmp(tmpl, "ref")) kind = QTTS_TEMPLATE_REF;
        else if (!strcmp(tmpl, "instruct")) kind = QTTS_TEMPLATE_INSTRUCT;
        else {
            cli_error("tokenize: --template must be target, ref or instruct, not '%s'", tmpl);
            return CLI_USAGE;
        }
    }
    char model_buf[PATH_MAX];
    const char *dir = cli_resolve_model(model, model_buf, sizeof model_buf); /* a path or a downloaded model's name */
    if (!dir) return cli_model_path(model) ? CLI_FAIL : CLI_USAGE; /* not found / none given */
    char *owned = NULL;
    size_t len;
    if (text) {
        len = strlen(text);
    } else {
        qtts_err rerr = {0};
        if (qtts_read_stream(stdin, "standard input", (size_t)1 << 30, &owned, &len, &rerr)) {
            cli_error("tokenize: %s", rerr.msg);
            return CLI_FAIL;
        }
        text = owned;
        if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) { /* a byte order mark is no text */
            text += 3;
            len -= 3;
        }
    }
    if (kind >= 0 && memchr(text, 0, len)) {
        cli_error("tokenize: --template text must not contain NUL bytes");
        free(owned);
        return CLI_FAIL;
    }
    qtts_err err = {0};
    cli_model_files files; /* a .gguf carries the tokenizer files too */
    qtts_tokenizer *tok = cli_model_files_open(&files, dir, &err) ? NULL : qtts_tok_load(files.dir, &err);
    cli_model_files_close(&files);
    if (!tok) {
        cli_error("%s", err.msg);
        free(owned);
        return CLI_FAIL;
    }
    int32_t *ids = NULL;
    int n = 0;
    int rc = kind >= 0 ? qtts_tok_encode_template(tok, (qtts_template_kind)kind, text, &ids, &n, &err)
                       : qtts_tok_encode(tok, text, len, &ids, &n, &err);
    free(owned);
    if (rc) {
        cli_error("%s", err.msg);
        qtts_tok_free(tok);
        return CLI_FAIL;
    }
    print_ids(tok, ids, n, show_tokens);
    free(ids);
    qtts_tok_free(tok);
    return fflush(stdout) ? CLI_FAIL : CLI_OK;
}
