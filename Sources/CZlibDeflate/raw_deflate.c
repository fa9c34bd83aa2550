// apkpatch: the one entry point of this copy of zlib's deflate (include/CZlibDeflate.h).
#include "CZlibDeflate.h"
#include "zlib.h"
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>

int ZEXPORT apkpatch_z_deflate_accel(z_streamp strm);

/* The tables of a deflate with the faster search (zlib's window, hash chains and pending symbols and the faster
   search's runs and trees, about 1.7 MB, nearly all of it written) come from one anonymous mapping, 2 MiB long and
   aligned, that the kernel is asked to back with one transparent huge page: their first writes then take one page
   fault instead of one per 4 KiB page, each a trap into the kernel that is slow under a hypervisor. Where the kernel
   keeps to 4 KiB pages the mapping costs what calloc's memory does; what does not fit, or all of it where there is no
   such mapping, is calloc's. The bytes written are the same either way. */
#define ARENA_SIZE ((size_t)2 << 20)

struct arena {
    unsigned char *base;   /* NULL: every table is calloc's (or the caller's regions') */
    size_t used;
    /* Memory the caller lends (apkpatch_deflate_raw_in): used first, region by region, each table zeroed. */
    unsigned char *const *regions;
    size_t region_count, region_size, region, region_used;
};

static int in_regions(const struct arena *arena, const unsigned char *address) {
    size_t index;
    for (index = 0; index < arena->region_count; index++)
        if (address >= arena->regions[index] && address < arena->regions[index] + arena->region_size) return 1;
    return 0;
}

static voidpf allocate(voidpf opaque, uInt items, uInt size) {
    struct arena *arena = (struct arena *)opaque;
    size_t count = (size_t)items * size;
    size_t rounded = (count + 63) & ~(size_t)63;
    if (arena != NULL && rounded >= count) {
        /* a table that does not fit in what is left of a region goes to the next one */
        for (; arena->region < arena->region_count; arena->region++, arena->region_used = 0) {
            if (rounded <= arena->region_size - arena->region_used) {
                unsigned char *address = arena->regions[arena->region] + arena->region_used;
                arena->region_used += rounded;
                memset(address, 0, count);   /* lent memory holds old bytes; zlib's tables are calloc's */
                return address;
            }
            if (arena->region_used == 0) break;   /* larger than a region: not lent memory */
        }
        if (arena->base != NULL && rounded <= ARENA_SIZE - arena->used) {
            voidpf address = arena->base + arena->used;   /* a fresh mapping reads as zeros, as calloc's memory does */
            arena->used += rounded;
            return address;
        }
    }
    return calloc(items, size);
}

static void release(voidpf opaque, voidpf address) {
    struct arena *arena = (struct arena *)opaque;
    if (arena != NULL && in_regions(arena, (unsigned char *)address)) return;   /* the caller's */
    if (arena != NULL && arena->base != NULL && (unsigned char *)address >= arena->base &&
        (unsigned char *)address < arena->base + ARENA_SIZE)
        return;   /* unmapped with the arena */
    free(address);
}

static void arena_open(struct arena *arena) {
    arena->base = NULL;
    arena->used = 0;
#if defined(MADV_HUGEPAGE) && defined(MAP_ANONYMOUS)
    {
        /* twice the size, then the unaligned ends unmapped: what is left starts on a 2 MiB boundary */
        unsigned char *mapped = (unsigned char *)mmap(NULL, 2 * ARENA_SIZE, PROT_READ | PROT_WRITE,
                                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        unsigned char *base;
        if (mapped == (unsigned char *)MAP_FAILED) return;
        base = (unsigned char *)(((uintptr_t)mapped + ARENA_SIZE - 1) & ~(uintptr_t)(ARENA_SIZE - 1));
        if (base > mapped) munmap(mapped, (size_t)(base - mapped));
        if (base + ARENA_SIZE < mapped + 2 * ARENA_SIZE)
            munmap(base + ARENA_SIZE, (size_t)(mapped + 2 * ARENA_SIZE - (base + ARENA_SIZE)));
        (void)madvise(base, ARENA_SIZE, MADV_HUGEPAGE);   /* refused: 4 KiB pages, the same memory */
        arena->base = base;
    }
#endif
}

static void arena_close(struct arena *arena) {
    if (arena->base != NULL) munmap(arena->base, ARENA_SIZE);
}

int apkpatch_deflate_raw(const uint8_t *input, size_t count, int level, int fast, uint8_t *output, size_t capacity,
                         size_t *written) {
    return apkpatch_deflate_raw_in(input, count, level, fast, output, capacity, written, NULL, 0, 0);
}

int apkpatch_deflate_raw_in(const uint8_t *input, size_t count, int level, int fast, uint8_t *output, size_t capacity,
                            size_t *written, uint8_t *const *regions, size_t region_count, size_t region_size) {
    z_stream stream;
    struct arena arena;
    int rc;
    if (count > 0xffffff00u) return Z_STREAM_ERROR;
    if (capacity > 0xffffffffu) capacity = 0xffffffffu;
    /* Only where zlib's deflate_slow runs; a failure to allocate its tables leaves zlib's own search. */
    fast = fast && level >= 4;
    arena.regions = regions;
    arena.region_count = regions == NULL ? 0 : region_count;
    arena.region_size = region_size;
    arena.region = 0;
    arena.region_used = 0;
    /* Lent memory large enough for all the tables needs no mapping of its own. */
    if (fast && arena.region_count * region_size < ARENA_SIZE) arena_open(&arena);
    else arena.base = NULL;
    memset(&stream, 0, sizeof(stream));
    stream.zalloc = allocate;
    stream.zfree = release;
    stream.opaque = &arena;
    rc = deflateInit2(&stream, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK) {
        arena_close(&arena);
        return rc;
    }
    stream.next_in = (z_const Bytef *)input;
    stream.avail_in = (uInt)count;
    stream.next_out = output;
    stream.avail_out = (uInt)capacity;
    if (fast) (void)apkpatch_z_deflate_accel(&stream);
    rc = deflate(&stream, Z_FINISH);
    if (rc == Z_STREAM_END) *written = stream.total_out;
    deflateEnd(&stream);
    arena_close(&arena);
    if (rc != Z_STREAM_END) return rc == Z_OK ? Z_BUF_ERROR : rc;
    return Z_OK;
}

/* deflateBound without a stream: its bound for any level and memLevel, above the one for ours */
size_t apkpatch_deflate_bound(size_t count) { return count > 0xffffff00u ? 0 : (size_t)deflateBound(Z_NULL, (uLong)count); }
