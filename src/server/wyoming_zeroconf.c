/* Zeroconf for the Wyoming server: publishes _wyoming._tcp through the Avahi
 * daemon, which is how Home Assistant discovers Wyoming services on the
 * local network. Avahi's threaded poll runs one thread of its own (socket
 * I/O with the daemon over D-Bus, no compute); its callbacks run there. */
#include <avahi-client/client.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/thread-watch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/wyoming.h"

#define WY_SERVICE_TYPE "_wyoming._tcp"

struct wy_zeroconf {
    AvahiThreadedPoll *poll;
    AvahiClient *client;
    AvahiEntryGroup *group;
    char *name; /* avahi_malloc'd: avahi_alternative_service_name replaces it on a collision */
    int port;
    int verbose;
};

static void publish(wy_zeroconf *z, AvahiClient *c);

static void rename_after_collision(wy_zeroconf *z) {
    char *alt = avahi_alternative_service_name(z->name);
    if (!alt) return;
    fprintf(stderr, "qtts wyoming: zeroconf: the name '%s' is taken on this network; announcing '%s'\n", z->name, alt);
    avahi_free(z->name);
    z->name = alt;
}

static void group_cb(AvahiEntryGroup *g, AvahiEntryGroupState state, void *user) {
    wy_zeroconf *z = user;
    switch (state) {
    case AVAHI_ENTRY_GROUP_ESTABLISHED:
        if (z->verbose)
            fprintf(stderr, "qtts wyoming: zeroconf: announced '%s' (%s, port %d)\n", z->name, WY_SERVICE_TYPE,
                    z->port);
        break;
    case AVAHI_ENTRY_GROUP_COLLISION:
        rename_after_collision(z);
        publish(z, avahi_entry_group_get_client(g));
        break;
    case AVAHI_ENTRY_GROUP_FAILURE:
        fprintf(stderr, "qtts wyoming: zeroconf: announcing failed: %s\n",
                avahi_strerror(avahi_client_errno(avahi_entry_group_get_client(g))));
        break;
    default: break;
    }
}

/* (Re)adds the service to the entry group and commits it. */
static void publish(wy_zeroconf *z, AvahiClient *c) {
    if (!z->group && !(z->group = avahi_entry_group_new(c, group_cb, z))) {
        fprintf(stderr, "qtts wyoming: zeroconf: %s\n", avahi_strerror(avahi_client_errno(c)));
        return;
    }
    avahi_entry_group_reset(z->group);
    for (int tries = 0; tries < 16; tries++) {
        int rc = avahi_entry_group_add_service(z->group, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, 0, z->name,
                                               WY_SERVICE_TYPE, NULL, NULL, (uint16_t)z->port, NULL);
        if (rc == AVAHI_ERR_COLLISION) {
            rename_after_collision(z);
            continue;
        }
        if (rc < 0 || (rc = avahi_entry_group_commit(z->group)) < 0)
            fprintf(stderr, "qtts wyoming: zeroconf: cannot announce '%s': %s\n", z->name, avahi_strerror(rc));
        return;
    }
}

static void client_cb(AvahiClient *c, AvahiClientState state, void *user) {
    wy_zeroconf *z = user;
    switch (state) {
    case AVAHI_CLIENT_S_RUNNING: publish(z, c); break; /* (again after the daemon's host name changed) */
    case AVAHI_CLIENT_S_COLLISION:
    case AVAHI_CLIENT_S_REGISTERING:
        if (z->group) avahi_entry_group_reset(z->group);
        break;
    case AVAHI_CLIENT_FAILURE:
        fprintf(stderr, "qtts wyoming: zeroconf: lost the Avahi daemon: %s\n", avahi_strerror(avahi_client_errno(c)));
        break;
    default: break;
    }
}

wy_zeroconf *wy_zeroconf_start(const char *name, int port, int verbose, char *why, size_t why_size) {
    wy_zeroconf *z = calloc(1, sizeof *z);
    if (!z || !(z->name = avahi_strdup(name && *name ? name : "qtts"))) {
        free(z);
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    z->port = port;
    z->verbose = verbose;
    int error = 0;
    if (!(z->poll = avahi_threaded_poll_new())) {
        snprintf(why, why_size, "cannot create Avahi's event loop");
        goto fail;
    }
    /* Without AVAHI_CLIENT_NO_FAIL a missing daemon fails here, at once. */
    z->client = avahi_client_new(avahi_threaded_poll_get(z->poll), 0, client_cb, z, &error);
    if (!z->client) {
        snprintf(why, why_size, "cannot reach the Avahi daemon (%s)", avahi_strerror(error));
        goto fail;
    }
    if (avahi_threaded_poll_start(z->poll) < 0) {
        snprintf(why, why_size, "cannot start Avahi's event loop thread");
        goto fail;
    }
    return z;
fail:
    if (z->client) avahi_client_free(z->client);
    if (z->poll) avahi_threaded_poll_free(z->poll);
    avahi_free(z->name);
    free(z);
    return NULL;
}

void wy_zeroconf_stop(wy_zeroconf *z) {
    if (!z) return;
    avahi_threaded_poll_stop(z->poll);
    avahi_client_free(z->client); /* frees the entry group: the service is withdrawn */
    avahi_threaded_poll_free(z->poll);
    avahi_free(z->name);
    free(z);
}
