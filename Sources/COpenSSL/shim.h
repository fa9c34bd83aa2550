// OpenSSL 3 (libcrypto), reached only through OpenSSLWrapper.
// Function-like macros Swift cannot import are re-exposed below as static inline functions.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/md5.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/pkcs7.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// BIO_get_mem_data is a macro over BIO_ctrl.
static inline long apkpatch_BIO_get_mem_data(BIO *bio, char **pp) {
    return BIO_get_mem_data(bio, pp);
}
// OPENSSL_free is a macro that adds the call site.
static inline void apkpatch_OPENSSL_free(void *p) {
    OPENSSL_free(p);
}
// sk_X509_* are macros over OPENSSL_sk_*.
static inline int apkpatch_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *apkpatch_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
static inline void apkpatch_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }
static inline STACK_OF(X509) *apkpatch_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int apkpatch_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline int apkpatch_sk_PKCS7_SIGNER_INFO_num(const STACK_OF(PKCS7_SIGNER_INFO) *sk) { return sk_PKCS7_SIGNER_INFO_num(sk); }
static inline PKCS7_SIGNER_INFO *apkpatch_sk_PKCS7_SIGNER_INFO_value(const STACK_OF(PKCS7_SIGNER_INFO) *sk, int i) { return sk_PKCS7_SIGNER_INFO_value(sk, i); }
// sk_PKCS7_* and sk_PKCS12_SAFEBAG_* (PKCS#12 authenticated safes and their bags) are macros too.
static inline int apkpatch_sk_PKCS7_num(const STACK_OF(PKCS7) *sk) { return sk_PKCS7_num(sk); }
static inline PKCS7 *apkpatch_sk_PKCS7_value(const STACK_OF(PKCS7) *sk, int i) { return sk_PKCS7_value(sk, i); }
static inline void apkpatch_sk_PKCS7_pop_free(STACK_OF(PKCS7) *sk) { sk_PKCS7_pop_free(sk, PKCS7_free); }
static inline int apkpatch_sk_PKCS12_SAFEBAG_num(const STACK_OF(PKCS12_SAFEBAG) *sk) { return sk_PKCS12_SAFEBAG_num(sk); }
static inline PKCS12_SAFEBAG *apkpatch_sk_PKCS12_SAFEBAG_value(const STACK_OF(PKCS12_SAFEBAG) *sk, int i) { return sk_PKCS12_SAFEBAG_value(sk, i); }
static inline void apkpatch_sk_PKCS12_SAFEBAG_pop_free(STACK_OF(PKCS12_SAFEBAG) *sk) { sk_PKCS12_SAFEBAG_pop_free(sk, PKCS12_SAFEBAG_free); }
// The content type of a PKCS7 (PKCS#12 safes are data or encryptedData); PKCS7_type_is_* are macros.
static inline int apkpatch_PKCS7_type_nid(const PKCS7 *p7) { return OBJ_obj2nid(p7->type); }
// A localKeyID attribute's octets (ASN1_TYPE's union is awkward from Swift); NULL if absent or not OCTET STRING.
static inline const ASN1_OCTET_STRING *apkpatch_PKCS12_SAFEBAG_localKeyID(const PKCS12_SAFEBAG *bag) {
    const ASN1_TYPE *t = PKCS12_SAFEBAG_get0_attr(bag, NID_localKeyID);
    return (t != NULL && t->type == V_ASN1_OCTET_STRING) ? t->value.octet_string : NULL;
}
// An encryptedData PKCS7's content-encryption algorithm and ciphertext (a PKCS#12 encrypted safe, decrypted
// with a key derived beside the others: PKCS12Decryption); the union is awkward from Swift. NULL when absent.
static inline const X509_ALGOR *apkpatch_PKCS7_encrypted_algorithm(const PKCS7 *p7) {
    if (OBJ_obj2nid(p7->type) != NID_pkcs7_encrypted || p7->d.encrypted == NULL || p7->d.encrypted->enc_data == NULL) return NULL;
    return p7->d.encrypted->enc_data->algorithm;
}
static inline const ASN1_OCTET_STRING *apkpatch_PKCS7_encrypted_content(const PKCS7 *p7) {
    if (OBJ_obj2nid(p7->type) != NID_pkcs7_encrypted || p7->d.encrypted == NULL || p7->d.encrypted->enc_data == NULL) return NULL;
    return p7->d.encrypted->enc_data->enc_data;
}
// Decrypted SafeContents, read as PKCS12_unpack_p7encdata reads them: PKCS12_SAFEBAGS has an ASN1_ITEM but no d2i.
static inline STACK_OF(PKCS12_SAFEBAG) *apkpatch_d2i_PKCS12_SAFEBAGS(const unsigned char *bytes, long length) {
    const unsigned char *cursor = bytes;
    return (STACK_OF(PKCS12_SAFEBAG) *)ASN1_item_d2i(NULL, &cursor, length, ASN1_ITEM_rptr(PKCS12_SAFEBAGS));
}

// Sun's PBEWithMD5AndTripleDES derivation (JCEKeyProtector, JCEKS keys): `out` = MD5(first || password), then
// `iterations` - 1 times MD5(out || password). The low-level MD5 functions hash without the EVP layer's
// per-call provider dispatch, which otherwise costs more than the hashing over Java's 200,000 rounds. They are
// deprecated in OpenSSL 3 (kept, not removed), hence the warning silenced for these lines only. 1 on success.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline int apkpatch_md5_chain(const unsigned char *first, size_t first_length, const unsigned char *password,
                                     size_t password_length, unsigned long iterations, unsigned char out[16]) {
    MD5_CTX context;
    int ok = iterations > 0 && MD5_Init(&context) && MD5_Update(&context, first, first_length)
        && MD5_Update(&context, password, password_length) && MD5_Final(out, &context);
    for (unsigned long round = 1; ok && round < iterations; round++) {
        ok = MD5_Init(&context) && MD5_Update(&context, out, 16) && MD5_Update(&context, password, password_length)
            && MD5_Final(out, &context);
    }
    OPENSSL_cleanse(&context, sizeof context);
    return ok;
}
#pragma clang diagnostic pop
