/* Checkpoint download from the HuggingFace hub (libcurl + OpenSSL libcrypto).
 *
 * Protocol (the hub's public HTTP API):
 *   GET {hub}/api/models/{repo}/tree/{rev}?recursive=true   file list: path,
 *       size, oid (git blob SHA-1) and, for LFS files, lfs.oid (SHA-256);
 *       follows Link: rel="next" pages.
 *   GET {hub}/{repo}/resolve/{rev}/{path}   the file (redirects followed).
 * Per file: skipped when the final file already has the listed size (it was
 * verified when installed); else downloaded to <file>.part, resuming an
 * existing .part with "Range: bytes=N-" (a server that answers 200 instead
 * of 206 restarts it), verified (size, then SHA-256 for LFS files or the git
 * blob SHA-1 otherwise), and renamed into place atomically. A mismatch
 * deletes the .part and fails. Transient failures are retried with resume.
 * Skipped: dotfiles (.gitattributes) and media files (images, audio, video,
 * pdf) that only illustrate the model card.
 *
 * Hub address: opts->hub_url, else $QTTS_HUB_URL, else https://huggingface.co.
 * Token for gated/private repos: opts->token, else $HF_TOKEN.
 * Calls curl_global_init/cleanup itself: use from one thread at a time (the
 * CLI). */
#ifndef QTTS_NET_DOWNLOAD_H
#define QTTS_NET_DOWNLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct {
    const char *hub_url;  /* NULL: $QTTS_HUB_URL or https://huggingface.co */
    const char *revision; /* NULL: "main" */
    const char *token;    /* NULL: $HF_TOKEN */
    int progress;         /* draw a progress line on stderr (only set it for a TTY) */
    int max_attempts;     /* per file, with resume in between; <= 0: 3 */
    long connect_timeout_s; /* <= 0: 30 */
    long stall_timeout_s;   /* abort a transfer below 1 byte/s for this long; <= 0: 60 */
} qtts_download_opts;

typedef struct {
    int files_total, files_downloaded, files_skipped;
    uint64_t bytes_total;      /* sum of listed sizes of the needed files */
    uint64_t bytes_downloaded; /* bytes received in this run */
} qtts_download_stats;

void qtts_download_opts_default(qtts_download_opts *o);

/* Downloads repo_id ("owner/name") into dir (created with parents). stats
 * may be NULL. Returns 0, or -1 with one line in err, e.g.
 *   "cannot reach https://huggingface.co (Couldn't connect to server): offline? ..."
 *   "model.safetensors: SHA-256 mismatch (... != ...): removed, run again" */
int qtts_download_repo(const char *repo_id, const char *dir, const qtts_download_opts *opts,
                       qtts_download_stats *stats, qtts_err *err);

/* Lowercase hex SHA-256 of a buffer (NUL-terminated); downloads are verified with it. */
void qtts_sha256_hex(const void *data, size_t n, char hex[65]);

#endif
