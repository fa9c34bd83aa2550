#include "password_kdf.h"
#include "pkcs12_sha1.h"
#include "kdf_bytes.h"

#include <sha256x16.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

static void portable_x2_blocks(uint32_t stateA[8], uint32_t stateB[8], const uint8_t *a, const uint8_t *b, size_t nblocks) {
    apk_sha256_portable_blocks(stateA, a, nblocks);
    apk_sha256_portable_blocks(stateB, b, nblocks);
}

struct engine {
    void (*one)(uint32_t state[8], const uint8_t *data, size_t nblocks);
    void (*two)(uint32_t stateA[8], uint32_t stateB[8], const uint8_t *a, const uint8_t *b, size_t nblocks);
};

/* A SHA-256 in progress from any state: `total` counts the bytes already compressed into it. */
struct hasher {
    const struct engine *engine;
    uint32_t state[8];
    uint8_t buffer[64];
    size_t buffered;
    uint64_t total;
};

static void hasher_start(struct hasher *h, const struct engine *engine, const uint32_t state[8], uint64_t total) {
    h->engine = engine;
    memcpy(h->state, state, sizeof h->state);
    h->buffered = 0;
    h->total = total;
}

static void hasher_update(struct hasher *h, const uint8_t *data, size_t length) {
    h->total += length;
    if (h->buffered > 0) {
        size_t take = 64 - h->buffered < length ? 64 - h->buffered : length;
        memcpy(h->buffer + h->buffered, data, take);
        h->buffered += take;
        data += take;
        length -= take;
        if (h->buffered < 64) return;
        h->engine->one(h->state, h->buffer, 1);
        h->buffered = 0;
    }
    if (length >= 64) {
        h->engine->one(h->state, data, length / 64);
        data += length - length % 64;
        length %= 64;
    }
    memcpy(h->buffer, data, length);
    h->buffered = length;
}

/* `length` bytes of `pattern` repeated from its start (the PKCS#12 KDF's S and P). */
static void hasher_update_repeating(struct hasher *h, const uint8_t *pattern, size_t patternLength, size_t length) {
    for (size_t done = 0; done < length;) {
        size_t offset = done % patternLength;
        size_t take = patternLength - offset < length - done ? patternLength - offset : length - done;
        hasher_update(h, pattern + offset, take);
        done += take;
    }
}

static void hasher_finish(struct hasher *h, uint32_t out[8]) {
    uint64_t bits = h->total * 8;
    h->buffer[h->buffered++] = 0x80;
    if (h->buffered > 56) {
        memset(h->buffer + h->buffered, 0, 64 - h->buffered);
        h->engine->one(h->state, h->buffer, 1);
        h->buffered = 0;
    }
    memset(h->buffer + h->buffered, 0, 56 - h->buffered);
    for (int i = 0; i < 8; i++) h->buffer[63 - i] = (uint8_t)(bits >> (8 * i));
    h->engine->one(h->state, h->buffer, 1);
    memcpy(out, h->state, 32);
    kdf_wipe(h, sizeof *h);
}

/* One output block of one derivation: after its first value (U_1, A_1), every further compression takes one
   block made of the previous digest and fixed padding, from a state known in advance. */
struct chain {
    uint32_t start[2][8];   /* PBKDF2: the HMAC key's inner and outer states, in turn; PKCS#12: the IV */
    uint32_t state[8];
    uint32_t sum[8];        /* PBKDF2: U_1 xor U_2 xor ... */
    uint8_t block[64];
    uint64_t left;          /* compressions still to run */
    int phase;              /* which start state the next compression takes */
    int pbkdf2;
    uint8_t *out;
    size_t out_length;
};

static void chain_set_digest(struct chain *c, const uint32_t digest[8], uint64_t messageBytes) {
    memset(c->block, 0, sizeof c->block);
    kdf_store_be(c->block, digest, 8);
    c->block[32] = 0x80;
    uint64_t bits = messageBytes * 8;
    for (int i = 0; i < 8; i++) c->block[63 - i] = (uint8_t)(bits >> (8 * i));
}

static void chain_prepare(struct chain *c) { memcpy(c->state, c->start[c->phase], sizeof c->state); }

static void chain_advance(struct chain *c) {
    if (c->pbkdf2 && c->phase == 1) {
        for (int i = 0; i < 8; i++) c->sum[i] ^= c->state[i];
    }
    kdf_store_be(c->block, c->state, 8);   /* the padding after the digest stays */
    if (c->pbkdf2) c->phase ^= 1;
    c->left--;
}

/* PBKDF2-HMAC-SHA256, output block `index` (from 1): U_1 = HMAC(P, S || INT(index)), then U_j = HMAC(P, U_j-1). */
static void pbkdf2_chain_start(struct chain *c, const struct engine *e, const apk_kdf_job *job, uint32_t index) {
    uint8_t key[64] = {0};
    if (job->password_length > 64) {
        struct hasher h;
        uint32_t digest[8];
        hasher_start(&h, e, IV, 0);
        hasher_update(&h, job->password, job->password_length);
        hasher_finish(&h, digest);
        kdf_store_be(key, digest, 8);
        kdf_wipe(digest, sizeof digest);
    } else if (job->password_length > 0) {
        memcpy(key, job->password, job->password_length);
    }
    uint8_t pad[64];
    for (int i = 0; i < 64; i++) pad[i] = key[i] ^ 0x36;
    memcpy(c->start[0], IV, 32);
    e->one(c->start[0], pad, 1);
    for (int i = 0; i < 64; i++) pad[i] = key[i] ^ 0x5c;
    memcpy(c->start[1], IV, 32);
    e->one(c->start[1], pad, 1);
    kdf_wipe(key, sizeof key);
    kdf_wipe(pad, sizeof pad);

    struct hasher h;
    uint32_t inner[8], u[8];
    uint8_t bytes[32];
    const uint8_t counter[4] = {(uint8_t)(index >> 24), (uint8_t)(index >> 16), (uint8_t)(index >> 8), (uint8_t)index};
    hasher_start(&h, e, c->start[0], 64);
    if (job->salt_length > 0) hasher_update(&h, job->salt, job->salt_length);
    hasher_update(&h, counter, 4);
    hasher_finish(&h, inner);
    kdf_store_be(bytes, inner, 8);
    hasher_start(&h, e, c->start[1], 64);
    hasher_update(&h, bytes, 32);
    hasher_finish(&h, u);
    memcpy(c->sum, u, sizeof u);
    chain_set_digest(c, u, 64 + 32);
    kdf_wipe(inner, sizeof inner);
    kdf_wipe(u, sizeof u);
    kdf_wipe(bytes, sizeof bytes);
    c->pbkdf2 = 1;
    c->phase = 0;
    c->left = 2 * ((uint64_t)job->iterations - 1);
}

/* The PKCS#12 KDF with SHA-256 (u = 32, v = 64) for an output of at most u bytes: A = H^r(D || S || P). */
static void pkcs12_chain_start(struct chain *c, const struct engine *e, const apk_kdf_job *job) {
    uint8_t diversifier[64];
    memset(diversifier, job->id, sizeof diversifier);
    struct hasher h;
    uint32_t a[8];
    hasher_start(&h, e, IV, 0);
    hasher_update(&h, diversifier, 64);
    if (job->salt_length > 0) hasher_update_repeating(&h, job->salt, job->salt_length, 64 * ((job->salt_length + 63) / 64));
    if (job->password_length > 0) {
        hasher_update_repeating(&h, job->password, job->password_length, 64 * ((job->password_length + 63) / 64));
    }
    hasher_finish(&h, a);
    memcpy(c->start[0], IV, 32);
    memcpy(c->start[1], IV, 32);
    memcpy(c->state, a, sizeof a);
    chain_set_digest(c, a, 32);
    kdf_wipe(a, sizeof a);
    c->pbkdf2 = 0;
    c->phase = 0;
    c->left = (uint64_t)job->iterations - 1;
}

/* Runs every chain to its end: the two with the most compressions left share the interleaved pair, so the
   pair stays busy until the shortest chains are all that remain. */
static void run_chains(struct chain *chains, size_t count, const struct engine *e) {
    for (;;) {
        size_t first = count, second = count;
        uint64_t third = 0;
        for (size_t i = 0; i < count; i++) {
            uint64_t left = chains[i].left;
            if (left == 0) continue;
            if (first == count || left > chains[first].left) {
                if (second != count) third = chains[second].left;
                second = first;
                first = i;
            } else if (second == count || left > chains[second].left) {
                if (second != count) third = chains[second].left;
                second = i;
            } else if (left > third) {
                third = left;
            }
        }
        if (first == count) return;
        struct chain *a = &chains[first];
        if (second == count) {
            while (a->left > 0) {
                chain_prepare(a);
                e->one(a->state, a->block, 1);
                chain_advance(a);
            }
            continue;
        }
        struct chain *b = &chains[second];
        uint64_t steps = b->left > third ? b->left - third : 1;
        for (uint64_t step = 0; step < steps; step++) {
            chain_prepare(a);
            chain_prepare(b);
            e->two(a->state, b->state, a->block, b->block, 1);
            chain_advance(a);
            chain_advance(b);
        }
    }
}

int apk_kdf_run(apk_kdf_job *jobs, size_t count, int engine) {
    size_t chainCount = 0;
    for (size_t j = 0; j < count; j++) {
        const apk_kdf_job *job = &jobs[j];
        if (job->iterations < 1 || job->out == NULL || job->out_length == 0) return -1;
        if ((job->password == NULL && job->password_length != 0) || (job->salt == NULL && job->salt_length != 0)) return -1;
        if (job->kind == APK_KDF_PBKDF2_HMAC_SHA256) {
            if (job->out_length > 1024) return -1;
            chainCount += (job->out_length + 31) / 32;
        } else if (job->kind == APK_KDF_PKCS12_SHA256) {
            if (job->out_length > 32) return -1;
            chainCount += 1;
        } else if (job->kind == APK_KDF_PKCS12_SHA1) {
            if (job->out_length > 64) return -1;
        } else {
            return -1;
        }
    }
    /* SHA-1's derivations (older Java's keystores) run on their own compression function (pkcs12_sha1.c). */
    if (apk_pkcs12_sha1_run(jobs, count, engine) != 0) return -1;
    if (chainCount == 0) return 0;
    struct chain *chains = calloc(chainCount, sizeof *chains);
    if (chains == NULL) return -1;

    struct engine e = {apk_sha256_portable_blocks, portable_x2_blocks};
    if (engine == APK_KDF_ENGINE_FASTEST && apk_sha256_shani_available()) {
        e.one = apk_sha256_shani_blocks;
        e.two = apk_sha256_shani_x2_blocks;
    }

    size_t next = 0;
    for (size_t j = 0; j < count; j++) {
        const apk_kdf_job *job = &jobs[j];
        if (job->kind == APK_KDF_PBKDF2_HMAC_SHA256) {
            for (size_t offset = 0, index = 1; offset < job->out_length; offset += 32, index++) {
                struct chain *c = &chains[next++];
                pbkdf2_chain_start(c, &e, job, (uint32_t)index);
                c->out = job->out + offset;
                c->out_length = job->out_length - offset < 32 ? job->out_length - offset : 32;
            }
        } else if (job->kind == APK_KDF_PKCS12_SHA256) {
            struct chain *c = &chains[next++];
            pkcs12_chain_start(c, &e, job);
            c->out = job->out;
            c->out_length = job->out_length;
        }
    }

    run_chains(chains, chainCount, &e);

    for (size_t i = 0; i < chainCount; i++) {
        uint8_t digest[32];
        kdf_store_be(digest, chains[i].pbkdf2 ? chains[i].sum : chains[i].state, 8);
        memcpy(chains[i].out, digest, chains[i].out_length);
        kdf_wipe(digest, sizeof digest);
    }
    kdf_wipe(chains, chainCount * sizeof *chains);
    free(chains);
    return 0;
}
