/*
 * tcpproxy: a TCP proxy for partition tests, between a process and a server.
 *
 *   tcpproxy LISTEN_PORT TARGET_PORT     (both on 127.0.0.1)
 *
 * It forwards bytes both ways. SIGUSR1 makes it silent: it keeps every
 * connection open but forwards nothing and accepts nothing (a network that
 * drops packets, no RST, no FIN); SIGUSR2 forwards again (what was held is
 * delivered late, as a healed network would). SIGTERM stops it.
 *
 * One thread, poll(2) over every socket. Tests only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXC 256

static volatile sig_atomic_t silent, stop;

static void on_sig(int s)
{
    if (s == SIGUSR1)
        silent = 1;
    else if (s == SIGUSR2)
        silent = 0;
    else
        stop = 1;
}

struct pair {
    int a, b; /* client side, server side; -1 when unused */
};

static int listen_on(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 64) != 0) {
        perror("tcpproxy: listen");
        exit(1);
    }
    return fd;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tcpproxy LISTEN_PORT TARGET_PORT\n");
        return 2;
    }
    int target = atoi(argv[2]);
    int lfd = listen_on(atoi(argv[1]));
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sig;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct pair p[MAXC];
    for (int i = 0; i < MAXC; i++)
        p[i].a = p[i].b = -1;
    while (!stop) {
        struct pollfd fds[1 + 2 * MAXC];
        int map[1 + 2 * MAXC], n = 0;
        if (!silent) {
            fds[n].fd = lfd;
            fds[n].events = POLLIN;
            map[n++] = -1;
            for (int i = 0; i < MAXC; i++) {
                if (p[i].a < 0)
                    continue;
                fds[n].fd = p[i].a;
                fds[n].events = POLLIN;
                map[n++] = 2 * i;
                fds[n].fd = p[i].b;
                fds[n].events = POLLIN;
                map[n++] = 2 * i + 1;
            }
        }
        int r = poll(fds, (nfds_t)n, 100);
        if (r <= 0 || silent)
            continue;
        for (int k = 0; k < n; k++) {
            if (!fds[k].revents)
                continue;
            if (map[k] < 0) {
                int c = accept(lfd, NULL, NULL);
                if (c < 0)
                    continue;
                int s = connect_to(target);
                int slot = -1;
                for (int i = 0; i < MAXC && slot < 0; i++)
                    if (p[i].a < 0)
                        slot = i;
                if (s < 0 || slot < 0) {
                    close(c);
                    if (s >= 0)
                        close(s);
                    continue;
                }
                p[slot].a = c;
                p[slot].b = s;
                continue;
            }
            int i = map[k] / 2, from = map[k] % 2 ? p[i].b : p[i].a,
                to = map[k] % 2 ? p[i].a : p[i].b;
            if (from < 0)
                continue;
            char buf[65536];
            ssize_t got = read(from, buf, sizeof(buf));
            if (got <= 0) {
                close(p[i].a);
                close(p[i].b);
                p[i].a = p[i].b = -1;
                continue;
            }
            for (ssize_t off = 0; off < got;) {
                ssize_t w = write(to, buf + off, (size_t)(got - off));
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0)
                    break;
                off += w;
            }
        }
    }
    return 0;
}
