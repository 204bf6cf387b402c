/* qtts download NAME [--dir DIR]: fetch an official checkpoint into the
 * model cache (or DIR), resumable and verified. Also home of the --model
 * resolver the other commands share. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "net/download.h"
#include "io/hub.h"

static void usage(FILE *out) {
    size_t n;
    const qtts_hub_model *m = qtts_hub_models(&n);
    fprintf(out,
            "usage: qtts download NAME [--dir DIR] [--revision REV] [--quiet]\n"
            "       qtts download --list\n\n"
            "Downloads an official checkpoint from the HuggingFace hub, resuming partial files and\n"
            "verifying sizes and checksums. NAME is one of:\n");
    for (size_t i = 0; i < n; i++) fprintf(out, "  %-18s %-38s %s\n", m[i].name, m[i].repo_id, m[i].what);
    fprintf(out,
            "or a hub repository id (owner/name).\n\n"
            "  --dir DIR        put the files in DIR (default: the model cache, see below)\n"
            "  --revision REV   branch, tag or commit (default main)\n"
            "  -q, --quiet      no progress bar (it is only drawn on a terminal anyway)\n"
            "  --list           print the known names and their cache folders\n\n"
            "Cache: $QTTS_HOME, else ~/.cache/qtts; a model lands in <cache>/<repo name>, and\n"
            "'-m NAME' (or QTTS_MODEL=NAME) finds it there. Hub: $QTTS_HUB_URL (default\n"
            "https://huggingface.co); token for gated repositories: $HF_TOKEN.\n"
            "Prints the model folder on stdout when done.\n");
}

static int list_models(void) {
    size_t n;
    const qtts_hub_model *m = qtts_hub_models(&n);
    for (size_t i = 0; i < n; i++) {
        char path[4096], found[4096];
        qtts_err err;
        if (qtts_model_cache_path(m[i].repo_id, path, sizeof path, &err)) snprintf(path, sizeof path, "?");
        printf("%-18s %-38s %s%s\n", m[i].name, m[i].repo_id, path,
               qtts_resolve_model(m[i].name, found, sizeof found) ? "" : " (not downloaded)");
    }
    return CLI_OK;
}

int cmd_download(int argc, char **argv) {
    const char *name = NULL, *dir = NULL, *rev = NULL;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--list")) {
            return list_models();
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--dir") || !strcmp(a, "--revision")) {
            if (i + 1 >= argc) {
                cli_error("%s needs a value", a);
                return CLI_USAGE;
            }
            if (!strcmp(a, "--dir")) dir = argv[++i];
            else rev = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            cli_error("download: unknown option '%s' (see 'qtts download --help')", a);
            return CLI_USAGE;
        } else if (!name) {
            name = a;
        } else {
            cli_error("download: one model at a time ('%s' and '%s' given)", name, a);
            return CLI_USAGE;
        }
    }
    if (!name) {
        usage(stderr);
        return CLI_USAGE;
    }
    qtts_err err = {0};
    char repo[256], dest[4096];
    if (qtts_hub_repo_id(name, repo, sizeof repo, &err)) {
        cli_error("%s", err.msg);
        return CLI_USAGE;
    }
    if (dir) {
        if (snprintf(dest, sizeof dest, "%s", dir) >= (int)sizeof dest) {
            cli_error("--dir path too long");
            return CLI_USAGE;
        }
    } else if (qtts_model_cache_path(repo, dest, sizeof dest, &err)) {
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    qtts_download_opts o;
    qtts_download_opts_default(&o);
    o.revision = rev;
    o.progress = !quiet && isatty(STDERR_FILENO);
    qtts_download_stats st;
    if (o.progress) fprintf(stderr, "%s -> %s\n", repo, dest);
    if (qtts_download_repo(repo, dest, &o, &st, &err)) {
        cli_error("download %s: %s", repo, err.msg);
        return CLI_FAIL;
    }
    if (o.progress)
        fprintf(stderr, "%d files (%.1f MB): %d downloaded, %d already present\n", st.files_total,
                st.bytes_total / 1e6, st.files_downloaded, st.files_skipped);
    printf("%s\n", dest);
    return CLI_OK;
}

const char *cli_resolve_model(const char *given, char *buf, size_t size) {
    const char *m = cli_model_path(given);
    if (!m) {
        cli_error("no model given: use -m PATH|NAME or set QTTS_MODEL (names: see 'qtts download --list')");
        return NULL;
    }
    const char *r = qtts_resolve_model(m, buf, size);
    if (r) return r;
    qtts_err err;
    char repo[256];
    if (!qtts_hub_repo_id(m, repo, sizeof repo, &err)) /* a known name or owner/name: it can be downloaded */
        cli_error("model '%s' not found: not a path, and not in the cache (%s); run 'qtts download %s'", m, buf, m);
    else if (!strchr(m, '/') && buf[0])
        cli_error("model '%s' not found: not a path, not in the cache (%s), and not a model name 'qtts download' "
                  "knows (see 'qtts download --list')", m, buf);
    else
        cli_error("model '%s' not found (no such file or folder)", m);
    return NULL;
}
