/* qtts voices list|add|rm|import: the registered voices of a voices
 * directory, the one `qtts serve --voices-dir` keeps (format:
 * src/voices/voice_files.h). list, rm and import read and change the files
 * alone, with no model; add extracts a voice from reference audio with a Base
 * model (an engine job) and writes it through the server's own store, so a
 * running server sees it on next use. import takes other programs' voice
 * files (src/voices/voice_import.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "io/file.h"
#include "qtts.h"
#include "text/lexicon.h"
#include "voices/voice_files.h"
#include "voices/voice_import.h"
#include "voices/voice_store.h"

/* as `qtts say --ref-audio`: a 60 s reference is at most ~70 MB even as 96 kHz 32-bit stereo */
#define MAX_AUDIO_BYTES ((size_t)256 << 20)
enum { REF_TEXT_SHOWN = 48 }; /* bytes of the transcript a table row shows */

static const char name_rule[] = "1-64 characters of A-Z a-z 0-9 _ - . starting with a letter or digit, without '..'";

static void voices_usage(FILE *out) {
    fprintf(out,
            "usage: qtts voices list [--voices-dir DIR] [--json]\n"
            "       qtts voices add NAME --ref-audio FILE [--ref-text TEXT | --x-vector-only] [-m MODEL]\n"
            "                       [--lexicon FILE] [--voices-dir DIR] [--threads N]\n"
            "       qtts voices rm NAME [--voices-dir DIR]\n"
            "       qtts voices import FILE [--name NAME] [--rvq FILE] [--ref-text TEXT] [--lexicon FILE]\n"
            "                       [--voices-dir DIR]\n"
            "\n"
            "Registered (cloned) voices: the directory `qtts serve --voices-dir DIR` keeps, used by\n"
            "`qtts say --voice NAME` and the server's \"voice\". list and rm need no model.\n"
            "\n"
            "      --voices-dir DIR      the voices directory (default $QTTS_VOICES_DIR)\n"
            "      --json                list: {\"voices_dir\": ..., \"voices\": [...]} on stdout\n"
            "  -m, --model PATH          add: a Base model (default $QTTS_MODEL)\n"
            "      --ref-audio FILE      add: the reference recording (0.08 to 60 s; '-' = stdin)\n"
            "      --ref-text TEXT       add: its transcript; the voice then clones in context\n"
            "      --x-vector-only       add: no transcript; the voice clones from the speaker embedding\n"
            "                            alone (also what happens without --ref-text)\n"
            "      --threads N           add: compute threads (default: all CPUs)\n"
            "      --lexicon FILE        add, import: the voice's pronunciation lexicon (written<TAB>spoken\n"
            "                            [<TAB>lang] per line), checked and kept as NAME.lexicon; requests\n"
            "                            with the voice use its entries over the global --lexicon's\n"
            "      --name NAME           import: the voice's name (default: FILE's name less its extension;\n"
            "                            a voice pack's voices keep their own names)\n"
            "      --rvq FILE            import: reference codes (.rvq) for a raw x-vector (default: FILE's\n"
            "                            .rvq next to it, when there is one)\n"
            "\n"
            "import reads: CrispASR voice packs (.gguf, every voice with codes and transcript), raw f32\n"
            "x-vectors (qwentts.cpp's .spk and .rvq, gm-C's x-vector .bin) and gm-C's .qvoice (its\n"
            "x-vector, codes and transcript). The voice then clones in context when it has codes and a\n"
            "transcript, else from the x-vector alone; its length must be the model's hidden size\n"
            "(checked on use).\n"
            "  -q, --quiet               no information lines on stderr\n"
            "\n"
            "NAME: %s.\n",
            name_rule);
}

const char *cli_voices_dir(const char *given) {
    if (given && *given) return given;
    const char *env = getenv("QTTS_VOICES_DIR");
    return env && *env ? env : NULL;
}

/* 0 if dir is an existing directory; otherwise prints why and returns -1. */
static int check_dir(const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0) {
        cli_error("voices dir %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        cli_error("voices dir %s: not a directory", dir);
        return -1;
    }
    return 0;
}

void cli_unknown_voice(const char *dir, const char *name) {
    srv_voice_file_info *list = NULL;
    size_t n = 0;
    char err[512];
    if (srv_voice_files_list(dir, &list, &n, err, sizeof err)) {
        cli_error("unknown voice '%.64s' (%s)", name, err);
        return;
    }
    if (n == 0) {
        cli_error("unknown voice '%.64s': %s holds no voices (add one with 'qtts voices add' or the server's POST "
                  "/v1/audio/voices)",
                  name, dir);
        srv_voice_files_list_free(list, n);
        return;
    }
    char names[1024];
    size_t o = 0;
    names[0] = 0;
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", list[i].name);
        if (w < 0 || (size_t)w >= sizeof names - o - 8) { /* room for ", ..." */
            snprintf(names + o, sizeof names - o, ", ...");
            break;
        }
        o += (size_t)w;
    }
    cli_error("unknown voice '%.64s' in %s (its voices: %s)", name, dir, names);
    srv_voice_files_list_free(list, n);
}

static const char *mode_of(const srv_voice_file_info *v) {
    return v->error[0] ? "corrupt" : v->in_context ? "in-context" : "x-vector-only";
}

/* The transcript for one table row: control characters as spaces, cut at a
 * character boundary after REF_TEXT_SHOWN bytes. */
static void shown_text(const char *s, char *out, size_t size) {
    size_t n = strlen(s), k = n;
    if (k > REF_TEXT_SHOWN) {
        k = REF_TEXT_SHOWN;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--; /* not inside a UTF-8 sequence */
    }
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < k && o + 6 < size; i++) out[o++] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
    snprintf(out + o, size - o, "%s\"", k < n ? "..." : "");
}

static void print_table(const srv_voice_file_info *list, size_t n) {
    int w = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(list[i].name) > w) w = (int)strlen(list[i].name);
    printf("%-*s  %-13s  %6s  %7s  %s\n", w, "NAME", "MODE", "FRAMES", "SECONDS", "REF_TEXT");
    for (size_t i = 0; i < n; i++) {
        const srv_voice_file_info *v = &list[i];
        char text[REF_TEXT_SHOWN + 16];
        if (v->error[0]) snprintf(text, sizeof text, "-");
        else if (v->ref_text) shown_text(v->ref_text, text, sizeof text);
        else snprintf(text, sizeof text, "-");
        printf("%-*s  %-13s  %6zu  %7.2f  %s\n", w, v->name, mode_of(v), v->n_frames,
               (double)v->n_frames * SRV_VOICE_FRAME_SECONDS, text);
        if (v->error[0]) printf("%-*s  ^ %s\n", w, "", v->error);
        if (v->lexicon_error[0]) printf("%-*s  ^ lexicon not used: %s\n", w, "", v->lexicon_error);
        else if (v->has_lexicon) printf("%-*s  ^ lexicon: %zu entries\n", w, "", v->lexicon_entries);
    }
}

static int print_json(const char *dir, const srv_voice_file_info *list, size_t n) {
    cJSON *root = cJSON_CreateObject();
    cJSON *arr =
        root && cJSON_AddStringToObject(root, "voices_dir", dir) ? cJSON_AddArrayToObject(root, "voices") : NULL;
    int ok = arr != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        const srv_voice_file_info *v = &list[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(arr, o) && cJSON_AddStringToObject(o, "name", v->name) &&
             cJSON_AddStringToObject(o, "mode", mode_of(v)) &&
             cJSON_AddBoolToObject(o, "x_vector_only", !v->in_context) &&
             cJSON_AddNumberToObject(o, "ref_frames", (double)v->n_frames) &&
             cJSON_AddNumberToObject(o, "ref_seconds", (double)v->n_frames * SRV_VOICE_FRAME_SECONDS) &&
             cJSON_AddNumberToObject(o, "xvector_size", (double)v->xvec_len) &&
             (v->ref_text ? cJSON_AddStringToObject(o, "ref_text", v->ref_text) != NULL
                          : cJSON_AddNullToObject(o, "ref_text") != NULL) &&
             (!v->error[0] || cJSON_AddStringToObject(o, "error", v->error)) &&
             (!v->has_lexicon || v->lexicon_error[0] ||
              cJSON_AddNumberToObject(o, "lexicon_entries", (double)v->lexicon_entries)) &&
             (!v->lexicon_error[0] || cJSON_AddStringToObject(o, "lexicon_error", v->lexicon_error));
    }
    char *js = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!js) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    puts(js);
    free(js);
    return CLI_OK;
}

static int voices_list(const char *dir, int json, int quiet) {
    if (check_dir(dir)) return CLI_FAIL;
    srv_voice_file_info *list = NULL;
    size_t n = 0;
    char err[512];
    if (srv_voice_files_list(dir, &list, &n, err, sizeof err)) {
        cli_error("%s", err);
        return CLI_FAIL;
    }
    int rc = CLI_OK;
    if (json) rc = print_json(dir, list, n);
    else if (n) print_table(list, n);
    else if (!quiet) fprintf(stderr, "qtts: no voices in %s\n", dir);
    srv_voice_files_list_free(list, n);
    return fflush(stdout) == 0 ? rc : CLI_FAIL;
}

static int voices_rm(const char *dir, const char *name, int quiet) {
    if (check_dir(dir)) return CLI_FAIL;
    char err[512];
    int rc = srv_voice_files_delete(dir, name, err, sizeof err);
    if (rc == -2) {
        cli_unknown_voice(dir, name);
        return CLI_FAIL;
    }
    if (rc) {
        cli_error("%s", err);
        return CLI_FAIL;
    }
    if (!quiet) fprintf(stderr, "qtts: removed voice '%s' from %s\n", name, dir);
    return CLI_OK;
}

typedef struct {
    const char *dir, *name, *model, *ref_audio, *ref_text, *lexicon;
    int x_vector_only, threads, quiet;
} add_opts;

/* --lexicon FILE read and checked before anything is registered: *text
 * (malloc'd) is what NAME.lexicon receives. */
static int lexicon_read(const char *path, char **text, size_t *n) {
    qtts_err qe = {0};
    *text = NULL, *n = 0;
    if (!path) return 0;
    qtts_lexicon *lx = NULL;
    if (qtts_read_file(path, (size_t)4 << 20, text, n, &qe) || !(lx = qtts_lexicon_parse_text(*text, *n, path, &qe))) {
        cli_error("--lexicon: %s", qe.msg);
        free(*text);
        *text = NULL;
        return -1;
    }
    qtts_lexicon_release(lx);
    return 0;
}

/* Puts the checked lexicon beside the registered voice NAME. */
static int lexicon_attach(const char *dir, const char *name, const char *path, const char *text, size_t n) {
    if (!text) return 0;
    char err[512];
    unsigned long counter = 0x4C58; /* distinct from the voice writes' temp names in this process */
    if (srv_voice_files_write_lexicon(dir, name, text, n, path, &counter, err, sizeof err)) {
        cli_error("voice '%s' was registered, but its lexicon was not: %s", name, err);
        return -1;
    }
    return 0;
}

static void warn_line(void *user, const char *msg) {
    (void)user;
    fprintf(stderr, "qtts: warning: %s\n", msg);
}

/* Extraction and the write, once the engine runs; the caller frees e. */
static int add_with_engine(const add_opts *o, qtts_engine *e, const char *audio, size_t n_audio) {
    const qtts_model_info *mi = qtts_engine_info(e);
    if (strcmp(mi->variant, "base")) {
        cli_error("voices add: voice cloning needs a Base model; this is a %s model", mi->variant);
        return CLI_FAIL;
    }
    qtts_error qerr = {0};
    const char *ref_text = o->x_vector_only || !o->ref_text || !*o->ref_text ? NULL : o->ref_text;
    qtts_voice *v = qtts_voice_from_audio_bytes(e, audio, n_audio, ref_text, &qerr); /* an engine job */
    if (!v) {
        cli_error("%s: %s", o->ref_audio, qerr.message);
        return CLI_FAIL;
    }
    char err[512] = "";
    int rc = CLI_FAIL;
    /* the server's store: it creates the directory and commits NAME.spk last */
    srv_voices *vs = srv_voices_open(e, o->dir, o->quiet ? NULL : warn_line, NULL, err, sizeof err);
    if (!vs) {
        cli_error("%s", err);
    } else {
        int added = srv_voices_add(vs, o->name, v, err, sizeof err);
        if (added == -2)
            cli_error("voice '%s' already exists in %s (remove it first: qtts voices rm %s)", o->name, o->dir, o->name);
        else if (added) cli_error("%s", err);
        else rc = CLI_OK;
    }
    srv_voices_free(vs);
    qtts_voice_release(v);
    return rc;
}

static int voices_add(const add_opts *o) {
    if (!o->ref_audio) {
        cli_error("voices add: --ref-audio FILE is required");
        return CLI_USAGE;
    }
    if (o->ref_text && o->x_vector_only) {
        cli_error("voices add: --ref-text and --x-vector-only exclude each other");
        return CLI_USAGE;
    }
    struct stat st;
    if (srv_voice_files_stat(o->dir, o->name, &st) == 0) { /* before minutes of model loading */
        cli_error("voice '%s' already exists in %s (remove it first: qtts voices rm %s)", o->name, o->dir, o->name);
        return CLI_FAIL;
    }
    char *lex_text = NULL;
    size_t lex_len = 0;
    if (lexicon_read(o->lexicon, &lex_text, &lex_len)) return CLI_FAIL; /* before minutes of model loading */
    char model_buf[PATH_MAX];
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    ep.model_path = cli_resolve_model(o->model, model_buf, sizeof model_buf);
    if (!ep.model_path) {
        free(lex_text);
        return cli_model_path(o->model) ? CLI_FAIL : CLI_USAGE; /* it said why */
    }
    ep.n_threads = o->threads;
    ep.max_batch = 1;
    char *audio = NULL;
    size_t n_audio = 0;
    qtts_err qe = {0};
    if (qtts_read_file(o->ref_audio, MAX_AUDIO_BYTES, &audio, &n_audio, &qe)) {
        cli_error("%s", qe.msg);
        free(lex_text);
        return CLI_FAIL;
    }
    qtts_error qerr = {0};
    qtts_engine *e = qtts_engine_create(&ep, &qerr);
    int rc = CLI_FAIL;
    if (!e) cli_error("%s", qerr.message);
    else rc = add_with_engine(o, e, audio, n_audio);
    qtts_engine_free(e);
    free(audio);
    if (rc == CLI_OK && lexicon_attach(o->dir, o->name, o->lexicon, lex_text, lex_len)) rc = CLI_FAIL;
    free(lex_text);
    if (rc != CLI_OK) return rc;
    /* the result, as `voices list` shows it: read back from the files */
    srv_voice_file_info info;
    char err[512];
    if (srv_voice_files_info(o->dir, o->name, &info, err, sizeof err)) {
        cli_error("%s", err);
        return CLI_FAIL;
    }
    print_table(&info, 1);
    srv_voice_files_info_free(&info);
    if (!o->quiet) fprintf(stderr, "qtts: added voice '%s' to %s\n", o->name, o->dir);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}

/* ---- import ---- */

typedef struct {
    const char *dir, *file, *name, *rvq, *ref_text, *lexicon;
    int quiet;
} import_opts;

/* FILE.rvq beside a FILE.spk or FILE.bin, when it exists (qwentts.cpp writes the pair). */
static int sibling_rvq(const char *file, char *out, size_t n) {
    const char *dot = strrchr(file, '.'), *slash = strrchr(file, '/');
    if (!dot || (slash && dot < slash) || (strcmp(dot, ".spk") && strcmp(dot, ".bin"))) return 0;
    if (snprintf(out, n, "%.*s.rvq", (int)(dot - file), file) >= (int)n) return 0;
    struct stat st;
    return stat(out, &st) == 0 && S_ISREG(st.st_mode);
}

/* FILE's name less its directory and extension. */
static void file_stem(const char *file, char *out, size_t n) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *dot = strrchr(base, '.');
    snprintf(out, n, "%.*s", (int)(dot && dot > base ? dot - base : (ptrdiff_t)strlen(base)), base);
}

static int import_write(const import_opts *o, voice_import_set *set, const char *lex_text, size_t lex_len) {
    char err[512];
    struct stat st;
    for (int i = 0; i < set->n; i++) { /* every name checked before anything is written */
        const char *nm = set->items[i].name;
        if (!srv_voice_name_ok(nm)) {
            cli_error("voices import: %s: invalid voice name '%.80s' (%s); give --name", o->file, nm, name_rule);
            return CLI_FAIL;
        }
        if (srv_voice_files_stat(o->dir, nm, &st) == 0) {
            cli_error("voice '%s' already exists in %s (remove it first: qtts voices rm %s)", nm, o->dir, nm);
            return CLI_FAIL;
        }
    }
    if (mkdir(o->dir, 0755) != 0 && errno != EEXIST) {
        cli_error("voices dir %s: %s", o->dir, strerror(errno));
        return CLI_FAIL;
    }
    if (check_dir(o->dir)) return CLI_FAIL;
    unsigned long counter = 0;
    for (int i = 0; i < set->n; i++) {
        const voice_import_item *it = &set->items[i];
        if (srv_voice_files_write_parts(o->dir, it->name, it->xvec, it->xvec_len, it->codes, it->n_frames,
                                        SRV_VOICE_FILE_CODEBOOKS, it->ref_text, &counter, &st, err, sizeof err)) {
            cli_error("%s", err);
            return CLI_FAIL;
        }
        if (lexicon_attach(o->dir, it->name, o->lexicon, lex_text, lex_len)) return CLI_FAIL;
        srv_voice_file_info info;
        if (srv_voice_files_info(o->dir, it->name, &info, err, sizeof err)) {
            cli_error("%s", err);
            return CLI_FAIL;
        }
        print_table(&info, 1);
        srv_voice_files_info_free(&info);
        if (!o->quiet)
            fprintf(stderr, "qtts: imported voice '%s' (%s, x-vector of %zu, %zu frames of codes) into %s\n", it->name,
                    set->format, it->xvec_len, it->n_frames, o->dir);
    }
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}

static int voices_import(const import_opts *o) {
    char *buf = NULL, *rvq = NULL, rvq_path[PATH_MAX];
    size_t n = 0, n_rvq = 0;
    qtts_err qe = {0};
    const char *rvq_file = o->rvq;
    if (!rvq_file && sibling_rvq(o->file, rvq_path, sizeof rvq_path)) rvq_file = rvq_path;
    char *lex_text = NULL;
    size_t lex_len = 0;
    if (lexicon_read(o->lexicon, &lex_text, &lex_len)) return CLI_FAIL;
    if (qtts_read_file(o->file, MAX_AUDIO_BYTES, &buf, &n, &qe) ||
        (rvq_file && qtts_read_file(rvq_file, MAX_AUDIO_BYTES, &rvq, &n_rvq, &qe))) {
        cli_error("%s", qe.msg);
        free(buf);
        free(lex_text);
        return CLI_FAIL;
    }
    voice_import_set set;
    int is_raw = n < 4 || (memcmp(buf, "GGUF", 4) && memcmp(buf, "QVCE", 4));
    int rc = CLI_FAIL;
    if (rvq_file && !o->rvq && !is_raw) { /* a sibling .rvq goes with raw x-vectors only */
        free(rvq);
        rvq = NULL, rvq_file = NULL;
    }
    if (voice_import_parse((const unsigned char *)buf, n, (const unsigned char *)rvq, n_rvq, o->file, &set, &qe)) {
        cli_error("voices import: %s", qe.msg);
    } else if ((o->name || o->ref_text) && set.n > 1) {
        cli_error("voices import: %s holds %d voices: --name and --ref-text apply to a file of one", o->file, set.n);
        rc = CLI_USAGE;
    } else {
        if (o->name) snprintf(set.items[0].name, sizeof set.items[0].name, "%s", o->name);
        else if (!set.items[0].name[0]) file_stem(o->file, set.items[0].name, sizeof set.items[0].name);
        if (o->ref_text && !(set.items[0].ref_text = strdup(o->ref_text))) cli_error("out of memory");
        else {
            if (rvq_file && !o->quiet) fprintf(stderr, "qtts: codes from %s\n", rvq_file);
            rc = import_write(o, &set, lex_text, lex_len);
        }
    }
    voice_import_free(&set);
    free(buf);
    free(rvq);
    free(lex_text);
    return rc;
}

enum { O_VOICES_DIR = 256, O_JSON, O_REF_AUDIO, O_REF_TEXT, O_XVEC, O_THREADS, O_NAME, O_RVQ, O_LEXICON };
static const struct option voices_options[] = {
    {"voices-dir", required_argument, 0, O_VOICES_DIR},
    {"json", no_argument, 0, O_JSON},
    {"model", required_argument, 0, 'm'},
    {"ref-audio", required_argument, 0, O_REF_AUDIO},
    {"ref-text", required_argument, 0, O_REF_TEXT},
    {"x-vector-only", no_argument, 0, O_XVEC},
    {"threads", required_argument, 0, O_THREADS},
    {"name", required_argument, 0, O_NAME},
    {"rvq", required_argument, 0, O_RVQ},
    {"lexicon", required_argument, 0, O_LEXICON},
    {"quiet", no_argument, 0, 'q'},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

int cmd_voices(int argc, char **argv) {
    if (argc < 2) {
        voices_usage(stderr);
        return CLI_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        voices_usage(stdout);
        return CLI_OK;
    }
    int is_list = !strcmp(sub, "list") || !strcmp(sub, "ls"), is_add = !strcmp(sub, "add");
    int is_rm = !strcmp(sub, "rm") || !strcmp(sub, "remove"), is_import = !strcmp(sub, "import");
    if (!is_list && !is_add && !is_rm && !is_import) {
        cli_error("voices: unknown subcommand '%s' (list, add, rm or import; see 'qtts voices --help')", sub);
        return CLI_USAGE;
    }
    add_opts o = {0};
    import_opts io = {0};
    int json = 0, add_only = 0, import_only = 0, text_given = 0, lexicon_given = 0;
    optind = 1;
    opterr = 0;
    int c;
    /* argv + 1: the subcommand is getopt's program name */
    while ((c = getopt_long(argc - 1, argv + 1, ":m:qh", voices_options, NULL)) != -1) {
        switch (c) {
        case O_VOICES_DIR: o.dir = optarg; break;
        case O_JSON: json = 1; break;
        case 'm':
            o.model = optarg;
            add_only = 1;
            break;
        case O_REF_AUDIO:
            o.ref_audio = optarg;
            add_only = 1;
            break;
        case O_REF_TEXT:
            o.ref_text = io.ref_text = optarg;
            text_given = 1;
            break;
        case O_LEXICON:
            o.lexicon = io.lexicon = optarg;
            lexicon_given = 1;
            break;
        case O_NAME:
            io.name = optarg;
            import_only = 1;
            break;
        case O_RVQ:
            io.rvq = optarg;
            import_only = 1;
            break;
        case O_XVEC:
            o.x_vector_only = 1;
            add_only = 1;
            break;
        case O_THREADS:
            if (cli_int_to("--threads", optarg, 1, 256, &o.threads)) return CLI_USAGE;
            add_only = 1;
            break;
        case 'q': o.quiet = 1; break;
        case 'h': voices_usage(stdout); return CLI_OK;
        case ':': cli_error("voices %s: option '%s' needs a value", sub, argv[optind]); return CLI_USAGE;
        default:
            cli_error("voices %s: unknown option '%s' (see 'qtts voices --help')", sub, argv[optind]);
            return CLI_USAGE;
        }
    }
    int n_args = argc - 1 - optind;
    if (is_list ? n_args != 0 : n_args != 1) {
        if (is_list) cli_error("voices list takes no arguments");
        else if (is_import) cli_error("voices import: give one FILE");
        else cli_error("voices %s: give one voice NAME", sub);
        return CLI_USAGE;
    }
    if ((add_only && !is_add) || (json && !is_list) || (import_only && !is_import) ||
        ((text_given || lexicon_given) && !is_add && !is_import)) {
        cli_error("voices %s: %s applies to 'voices %s' only", sub, json ? "--json" : "that option",
                  json                      ? "list"
                  : import_only             ? "import"
                  : (text_given || lexicon_given) && !add_only ? "add' or 'voices import"
                                            : "add");
        return CLI_USAGE;
    }
    o.dir = cli_voices_dir(o.dir);
    if (!o.dir) {
        cli_error("voices %s: no voices directory: give --voices-dir DIR or set $QTTS_VOICES_DIR", sub);
        return CLI_USAGE;
    }
    if (is_list) return voices_list(o.dir, json, o.quiet);
    if (is_import) {
        io.dir = o.dir;
        io.file = argv[1 + optind];
        io.quiet = o.quiet;
        return voices_import(&io);
    }
    o.name = argv[1 + optind];
    if (!srv_voice_name_ok(o.name)) {
        cli_error("voices %s: invalid voice name '%.80s' (%s)", sub, o.name, name_rule);
        return CLI_USAGE;
    }
    return is_add ? voices_add(&o) : voices_rm(o.dir, o.name, o.quiet);
}
