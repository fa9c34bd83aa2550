// libzip, reached only through LibzipWrapper. It is loaded on first use (dlopen) rather than linked: only
// `apkpatch unpack` extracts with it, and loading it (with libbz2) at every start cost ~0.5 ms per command.
#include <zip.h>
#include <dlfcn.h>
#include <stddef.h>

// The libzip functions LibzipWrapper calls, resolved from libzip.so.4.
typedef struct apkpatch_libzip {
    __typeof__(zip_open) *open;
    __typeof__(zip_discard) *discard;
    __typeof__(zip_get_num_entries) *get_num_entries;
    __typeof__(zip_get_name) *get_name;
    __typeof__(zip_fopen_index) *fopen_index;
    __typeof__(zip_fread) *fread;
    __typeof__(zip_fclose) *fclose;
    __typeof__(zip_strerror) *strerror;
    __typeof__(zip_file_strerror) *file_strerror;
    __typeof__(zip_error_init_with_code) *error_init_with_code;
    __typeof__(zip_error_strerror) *error_strerror;
    __typeof__(zip_error_fini) *error_fini;
    __typeof__(zip_get_error) *get_error;
    __typeof__(zip_file_get_error) *file_get_error;
    __typeof__(zip_error_code_zip) *error_code_zip;
    __typeof__(zip_error_code_system) *error_code_system;
} apkpatch_libzip;

// Fills `table`; returns NULL, or dlerror()'s message when libzip or one of its functions is missing.
static inline const char *apkpatch_libzip_load(apkpatch_libzip *table) {
    void *handle = dlopen("libzip.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!handle) return dlerror();
#define APKPATCH_LIBZIP_SYMBOL(field, name) \
    if (!(table->field = (__typeof__(name) *)dlsym(handle, #name))) return dlerror();
    APKPATCH_LIBZIP_SYMBOL(open, zip_open)
    APKPATCH_LIBZIP_SYMBOL(discard, zip_discard)
    APKPATCH_LIBZIP_SYMBOL(get_num_entries, zip_get_num_entries)
    APKPATCH_LIBZIP_SYMBOL(get_name, zip_get_name)
    APKPATCH_LIBZIP_SYMBOL(fopen_index, zip_fopen_index)
    APKPATCH_LIBZIP_SYMBOL(fread, zip_fread)
    APKPATCH_LIBZIP_SYMBOL(fclose, zip_fclose)
    APKPATCH_LIBZIP_SYMBOL(strerror, zip_strerror)
    APKPATCH_LIBZIP_SYMBOL(file_strerror, zip_file_strerror)
    APKPATCH_LIBZIP_SYMBOL(error_init_with_code, zip_error_init_with_code)
    APKPATCH_LIBZIP_SYMBOL(error_strerror, zip_error_strerror)
    APKPATCH_LIBZIP_SYMBOL(error_fini, zip_error_fini)
    APKPATCH_LIBZIP_SYMBOL(get_error, zip_get_error)
    APKPATCH_LIBZIP_SYMBOL(file_get_error, zip_file_get_error)
    APKPATCH_LIBZIP_SYMBOL(error_code_zip, zip_error_code_zip)
    APKPATCH_LIBZIP_SYMBOL(error_code_system, zip_error_code_system)
#undef APKPATCH_LIBZIP_SYMBOL
    return NULL;
}
