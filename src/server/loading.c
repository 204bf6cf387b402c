/* The server's port while the model loads (server.h,
 * qtts_server_loading_start): opened before the load, so a readiness probe
 * or a client sees "loading" rather than a refused connection, then handed
 * to the server, whose daemon accepts on the same socket. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/internal.h"

struct qtts_server_loading {
    struct MHD_Daemon *daemon;
    int port;
};

int srv_listen_addr(const char *host, int port, struct sockaddr_storage *ss, int *ipv6) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    *ipv6 = 0;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *ipv6 = 1;
    } else if (!strcmp(host, "localhost")) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
        return -1;
    }
    return 0;
}

static const char k_health[] = "{\"status\":\"loading\"}";
static const char k_busy[] =
    "{\"error\":{\"message\":\"the model is loading; retry shortly\",\"type\":\"server_busy\",\"param\":null,"
    "\"code\":\"loading\"}}";

/* Every request, once its body (discarded) is in: 503, /health saying loading. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    static int started; /* only its address is used: a non-NULL marker, never written */
    (void)cls, (void)method, (void)version, (void)upload_data;
    if (!*con_cls) {
        *con_cls = &started;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    const int health = !strcmp(url, "/health") || !strcmp(url, "/healthz");
    const char *body = health ? k_health : k_busy;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Retry-After", "1");
    MHD_add_response_header(r, "Connection", "close"); /* the next request goes to the loaded server */
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
    MHD_destroy_response(r);
    return ok;
}

qtts_server_loading *qtts_server_loading_start(const qtts_server_params *p, char *err, size_t err_size) {
    const char *host = p->host && *p->host ? p->host : "127.0.0.1";
    struct sockaddr_storage ss;
    int ipv6;
    if (p->port < 0 || p->port > 65535) {
        snprintf(err, err_size, "invalid port %d", p->port);
        return NULL;
    }
    if (srv_listen_addr(host, p->port, &ss, &ipv6)) {
        snprintf(err, err_size, "--host '%s' is not an IPv4/IPv6 address", host);
        return NULL;
    }
    qtts_server_loading *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    /* ITC: MHD_quiesce_daemon needs it to stop accepting while the socket stays open */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC | (ipv6 ? MHD_USE_IPv6 : 0);
    struct MHD_OptionItem reuse[2] = {{MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL}, {MHD_OPTION_END, 0, NULL}};
    if (!p->reuse_port) reuse[0].option = MHD_OPTION_END; /* as the server's own listener (http.c) */
    l->daemon = MHD_start_daemon(flags, (uint16_t)p->port, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                                 MHD_OPTION_CONNECTION_LIMIT, 256u, MHD_OPTION_ARRAY, reuse, MHD_OPTION_END);
    if (!l->daemon) {
        int e = errno;
        snprintf(err, err_size, "cannot listen on %s:%d: %s", host, p->port,
                 e == EADDRINUSE ? "address already in use (another server?)" : strerror(e));
        free(l);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_BIND_PORT);
    l->port = di && di->port ? di->port : p->port;
    return l;
}

int qtts_server_loading_port(const qtts_server_loading *l) { return l->port; }

int qtts_server_loading_handover(qtts_server_loading *l) {
    if (!l->daemon) return -1;
    /* stop accepting: connections that arrive from now on wait in the socket's backlog for the server */
    MHD_socket fd = MHD_quiesce_daemon(l->daemon);
    MHD_stop_daemon(l->daemon); /* its open connections are closed; the quiesced socket is not */
    l->daemon = NULL;
    return fd == MHD_INVALID_SOCKET ? -1 : (int)fd;
}

void qtts_server_loading_free(qtts_server_loading *l) {
    if (!l) return;
    if (l->daemon) MHD_stop_daemon(l->daemon);
    free(l);
}
