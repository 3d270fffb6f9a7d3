/*
 * sdnotify: tell systemd how the service is doing (sd_notify(3)), without
 * libsystemd: one datagram to the socket named by $NOTIFY_SOCKET.
 *
 * droverd and drover-worker run as Type=notify units (conf/systemd): they send
 * "READY=1" once they serve (joined their group, the schema in place) and
 * "STOPPING=1" when a SIGTERM starts their drain. Without $NOTIFY_SOCKET (not
 * under systemd) nothing is sent.
 *
 * Thread: any. Ownership: none kept.
 */
#ifndef DROVER_SDNOTIFY_H
#define DROVER_SDNOTIFY_H

/*
 * Send state ("READY=1", "STOPPING=1", "STATUS=...") to $NOTIFY_SOCKET: a
 * path, or an abstract socket when it starts with '@'. Exactly one of: 1
 * (sent), 0 (no $NOTIFY_SOCKET), -errno (the socket could not be reached).
 */
int sdnotify(const char *state);

#endif
