/*
 * sshkey: SSH key pairs for clusters and nodes (library drover_sshkey).
 *
 * The engine makes one key pair per cluster when the cluster is created: the
 * public half goes to every node's authorized keys (the loopback provider
 * writes it, the ssh-pool provider installs it), the private half is sealed
 * with the cluster and reaches the ssh automator in the task's
 * config.ssh.private_key. The loopback provider also makes each node's host key
 * here.
 *
 * Keys are Ed25519 (OpenSSL 3 makes them). The public key is one OpenSSH
 * authorized_keys line, "ssh-ed25519 AAAA... comment". The private key is in
 * the OpenSSH format that ssh-keygen writes ("-----BEGIN OPENSSH PRIVATE
 * KEY-----", unencrypted), which sshd (as a host key), ssh -i, and libssh2 1.10
 * with OpenSSL (libssh2_userauth_publickey_frommemory) all load.
 *
 * Fingerprints are OpenSSH's: "SHA256:" and the unpadded base64 of the SHA-256
 * of the public key blob, as `ssh-keygen -l` prints them.
 *
 * Threads: every function may be called from any thread.
 * Errors: 0 or a negative DRV_E* code, with detail in err when given.
 */
#ifndef DROVER_SSHKEY_H
#define DROVER_SSHKEY_H

#include <stddef.h>

#include "error.h"

/* Room for a fingerprint string: "SHA256:" + 43 characters + NUL. */
#define SSHKEY_FP_LEN 51

struct sshkey_pair {
    char *public_line; /* "ssh-ed25519 AAAA... comment\n"-less line; owned */
    char *private_pem; /* the OpenSSH private key, PEM-armoured, ends in '\n'; owned, secret */
};

/*
 * Make a new Ed25519 key pair. comment (may be NULL or empty) ends the public
 * line and is stored in the private key; it must hold no newline. On success
 * kp's strings are new and belong to the caller, who frees them with
 * sshkey_pair_clear(). On failure kp is left empty. DRV_ETLS when OpenSSL fails,
 * DRV_EINVAL for a bad comment.
 */
int sshkey_generate(const char *comment, struct sshkey_pair *kp, struct drv_err *err);

/* Wipe the private key's bytes, free both strings, and empty kp. kp may be empty. */
void sshkey_pair_clear(struct sshkey_pair *kp);

/*
 * The fingerprint of a public key blob (the decoded base64 field of a public
 * key line, or what libssh2_session_hostkey() returns) into out, which holds at
 * least SSHKEY_FP_LEN bytes. Never fails for a non-empty blob.
 */
int sshkey_fingerprint_blob(const unsigned char *blob, size_t len, char *out);

/*
 * The fingerprint of a public key line ("ssh-ed25519 AAAA... [comment]", any
 * key type) into out (SSHKEY_FP_LEN bytes). When type is not NULL, the key's
 * type ("ssh-ed25519") is copied there (type_len bytes, truncated). DRV_EINVAL
 * when the line is not a public key.
 */
int sshkey_fingerprint_line(const char *line, char *out, char *type, size_t type_len,
                            struct drv_err *err);

#endif
