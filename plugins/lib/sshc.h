/*
 * sshc: the SSH client that Drover's plugins share (libssh2 1.10, OpenSSL).
 *
 * One struct sshc is one authenticated (or, for a host key probe, merely
 * handshaken) SSH session to one host. The host key is checked against the
 * fingerprint the caller expects before anything else is sent: there is no
 * trust on first use. Authentication is by key only, from memory (the key is
 * never written to a file on this side).
 *
 * Commands run on exec channels with a deadline; their standard output and
 * error are captured up to a bound (the last bytes are kept: the end of a log
 * says more than its start). Files go up by SFTP.
 *
 * Threads: one thread per struct sshc. libssh2_init() is called on first use.
 * Ownership: strings passed in are borrowed for the call; what the functions
 * return is owned as each comment says.
 * Errors: 0 or a negative DRV_E* code with a message in err: DRV_ETIMEDOUT
 * (deadline), DRV_EAGAIN (cannot connect: refused, unreachable), DRV_EPERM (host
 * key mismatch, authentication refused), DRV_ESSH (the session failed; lib_code
 * holds libssh2's code), DRV_EIO (a local file).
 */
#ifndef DROVER_SSHC_H
#define DROVER_SSHC_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "sshkey.h"

struct sshc_opts {
    const char *host;          /* an address or a name */
    int port;                  /* 0 means 22 */
    const char *user;          /* NULL: no authentication (a host key probe) */
    const char *private_key;   /* with user: the key's text (OpenSSH or PEM); a secret */
    const char *public_key;    /* its public line, or NULL (libssh2 derives it) */
    const char *host_key;      /* the expected fingerprint "SHA256:..."; see accept_any_host_key */
    const char *host_key_type; /* "ssh-ed25519" etc.: ask the server for this type; NULL: any */
    bool accept_any_host_key;  /* probes only (user must be NULL): learn the key, check nothing */
    bool nodes_only;           /* refuse a host that is not a node's address: a name, an
                                  unspecified address, one of this host's own, a loopback
                                  address no node listens on (sshc_node_address); the
                                  ssh automator's, ssh-pool's */
    int timeout_ms;            /* bound of each blocking step and of a command run with
                                  timeout 0; 0 means 10000 (plugin_ssh_timeout_ms) */
};

struct sshc;

/*
 * Connect, handshake, check the host key and authenticate. Returns NULL with
 * err filled: "connect to 127.0.0.9:22: connection refused", "host key of
 * 10.0.0.5:22 does not match the one expected (SHA256:...)" (never the key the
 * host offered: a tenant that names an address would learn it, an oracle),
 * "ssh key authentication as root on 10.0.0.5:22 refused".
 */
struct sshc *sshc_connect(const struct sshc_opts *o, struct drv_err *err);

/*
 * Whether host:port (port 0: 22) may be connected to as a node (issue 32): a
 * numeric IPv4 or IPv6 address that is neither unspecified (0.0.0.0/8, ::) nor
 * one of this host's own (its interfaces' addresses, 127.0.0.1 and ::1 always,
 * an IPv4-mapped form too); another address of 127.0.0.0/8 only when a socket
 * listens on exactly it and port (a loopback node's sshd), since the host's
 * wildcard listeners answer on all of them: the worker's host is no node, and
 * its sshd no tenant's. 0, or DRV_EPERM with err naming the address.
 */
int sshc_node_address(const char *host, int port, struct drv_err *err);

/* The server's host key fingerprint and type ("ssh-ed25519"); owned by c. */
const char *sshc_host_key(const struct sshc *c);
const char *sshc_host_key_type(const struct sshc *c);

/* "host:port" for messages; owned by c. */
const char *sshc_peer(const struct sshc *c);

struct sshc_out {
    char *out, *err; /* NUL-terminated, owned (sshc_out_free) */
    size_t out_len, err_len;
    bool out_cut, err_cut; /* only the last cap bytes were kept */
    int status;            /* exit status, -1 when the command died of a signal or gave none */
    char signal[32];       /* "KILL" when it died of a signal, else "" */
};

void sshc_out_free(struct sshc_out *o);

/*
 * Run cmd (a line for the remote user's shell) with in (may be NULL) on its
 * standard input, keeping at most cap bytes of each output stream, until it
 * exits or timeout_ms passes (0: the connection's timeout_ms). DRV_ETIMEDOUT says
 * which command timed out after how long: 'command "..." on host:port: timed out
 * after N ms' (the channel is closed, the remote command may still run). A non-zero exit status is
 * not an error: read out->status.
 */
int sshc_exec(struct sshc *c, const char *cmd, const void *in, size_t in_len, size_t cap,
              int timeout_ms, struct sshc_out *out, struct drv_err *err);

/* Create a remote directory (mode); an existing one is fine. */
int sshc_mkdir(struct sshc *c, const char *path, unsigned mode, struct drv_err *err);

/* Write data to a remote file (created or truncated, mode). */
int sshc_put(struct sshc *c, const char *path, const void *data, size_t len, unsigned mode,
             struct drv_err *err);

/*
 * Upload a local file or directory tree to remote (a file keeps its owner's
 * execute bit: 0700 or 0600; directories are 0700). Symbolic links are
 * refused. *bytes (may be NULL) adds up what was sent.
 */
int sshc_put_tree(struct sshc *c, const char *local, const char *remote, size_t *bytes,
                  struct drv_err *err);

/* End the session (politely) and free c. c may be NULL. */
void sshc_close(struct sshc *c);

/*
 * Normalise an expected host key as operators write it: a fingerprint
 * "SHA256:...", "<type> SHA256:...", or a public key line "<type> AAAA..." (as
 * ssh-keyscan prints it). fp gets the fingerprint (SSHKEY_FP_LEN bytes), type
 * the key type or "" when the input has none (type_len bytes).
 */
int sshc_host_key_parse(const char *in, char *fp, char *type, size_t type_len, struct drv_err *err);

#endif
