/* The web page: one static file, served from the binary's read-only data. */
#include "server/web.h"

#include "server/internal.h"

/* The page is one self-contained file: everything it loads is inline, and
 * everything it talks to is this server (fetch) or audio it made itself
 * (blob: URLs for <audio>). Inline script and style need 'unsafe-inline';
 * everything else is refused, so even injected markup could load nothing
 * from, and send nothing to, another origin. */
#define WEB_CSP                                                                                                        \
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "                        \
    "media-src 'self' blob:; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "           \
    "form-action 'none'; frame-ancestors 'none'"

enum MHD_Result srv_route_web_page(qtts_server *s, struct MHD_Connection *c) {
    /* PERSISTENT: the bytes are static data, nothing is copied per request. */
    struct MHD_Response *r =
        MHD_create_response_from_buffer(qtts_web_index_html_len, (void *)qtts_web_index_html, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
    /* Revalidate on every load, so a new binary's page is seen at once. */
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "Content-Security-Policy", WEB_CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    return srv_queue(s, c, 200, r);
}
