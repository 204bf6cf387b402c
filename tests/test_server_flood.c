/* 1,100 idle connections (no request sent) must not lock new clients out:
 * libmicrohttpd's select() loop closed every socket >= 1024 right after
 * accept, so about 1,004 idle sockets reset every new client until the idle
 * timeout. The server now uses epoll and a connection limit its open-files
 * limit can hold. */
#include <sys/resource.h>
#include <sys/stat.h>

#include "harness.h"
#include "test_server_http.h"

#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define N_IDLE 1100

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(BASE_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny Base model present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_flood");
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < N_IDLE + 200) {
        printf("SKIP test_server_flood: the hard open-files limit is %llu\n", (unsigned long long)rl.rlim_max);
        return test_finish("test_server_flood");
    }
    rl.rlim_cur = N_IDLE + 200; /* this client's sockets; the server raises its own */
    setrlimit(RLIMIT_NOFILE, &rl);
    th_server srv;
    const char *args[] = {"-m", BASE_MODEL, "--threads", "2", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server starts: %s", srv.log);
        return test_finish("test_server_flood");
    }
    int *fds = malloc(N_IDLE * sizeof *fds), opened = 0;
    for (int i = 0; fds && i < N_IDLE; i++)
        if ((fds[i] = th_connect(srv.port)) >= 0) opened++;
    TEST_CHECK(opened == N_IDLE, "%d of %d idle connections opened", opened, N_IDLE);
    usleep(500000);
    int served = 0;
    for (int i = 0; i < 5; i++) {
        th_resp r;
        if (th_get(srv.port, "/health", NULL, &r) == 0 && r.status == 200) served++;
        th_resp_free(&r);
    }
    TEST_CHECK(served == 5, "with %d idle connections open, %d of 5 new clients were served", opened, served);
    for (int i = 0; fds && i < N_IDLE; i++)
        if (fds[i] >= 0) close(fds[i]);
    free(fds);
    TEST_CHECK(th_stop(&srv, 30) == 0, "server exits cleanly: %s", srv.log);
    return test_finish("test_server_flood");
}
