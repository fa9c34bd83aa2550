/* zconf.h -- configuration of the zlib compression library
 * apkpatch: altered from zlib 1.2.13: Z_PREFIX names start with apkpatch_z_ (not z_) but for
 * the init macros zlib.h defines, adler32 and crc32 keep their names (the system zlib's),
 * zutil.c's globals are renamed.
 * Copyright (C) 1995-2016 Jean-loup Gailly, Mark Adler
 * For conditions of distribution and use, see copyright notice in zlib.h
 */

/* @(#) $Id$ */

#ifndef ZCONF_H
#define ZCONF_H

/*
 * If you *really* need a unique prefix for all types and library functions,
 * compile with -DZ_PREFIX. The "standard" zlib should be compiled without it.
 * Even better than compiling with -DZ_PREFIX would be to use configure to set
 * this permanently in zconf.h using "./configure --zprefix".
 */
#ifdef Z_PREFIX     /* may be set to #if 1 by ./configure */
#  define Z_PREFIX_SET

/* apkpatch: zutil.c's globals too (Z_SOLO), so this copy links beside the system zlib */
#  define z_errmsg              apkpatch_z_errmsg
#  define zmemcpy               apkpatch_z_zmemcpy
#  define zmemcmp               apkpatch_z_zmemcmp
#  define zmemzero              apkpatch_z_zmemzero

/* all linked symbols and init macros */
#  define _dist_code            apkpatch_z__dist_code
#  define _length_code          apkpatch_z__length_code
#  define _tr_align             apkpatch_z__tr_align
#  define _tr_flush_bits        apkpatch_z__tr_flush_bits
#  define _tr_flush_block       apkpatch_z__tr_flush_block
#  define _tr_init              apkpatch_z__tr_init
#  define _tr_stored_block      apkpatch_z__tr_stored_block
#  define _tr_tally             apkpatch_z__tr_tally
#  ifndef Z_SOLO
#    define compress              apkpatch_z_compress
#    define compress2             apkpatch_z_compress2
#    define compressBound         apkpatch_z_compressBound
#  endif
#  define deflate               apkpatch_z_deflate
#  define deflateBound          apkpatch_z_deflateBound
#  define deflateCopy           apkpatch_z_deflateCopy
#  define deflateEnd            apkpatch_z_deflateEnd
#  define deflateGetDictionary  apkpatch_z_deflateGetDictionary
#  define deflateInit           z_deflateInit
#  define deflateInit2          z_deflateInit2
#  define deflateInit2_         apkpatch_z_deflateInit2_
#  define deflateInit_          apkpatch_z_deflateInit_
#  define deflateParams         apkpatch_z_deflateParams
#  define deflatePending        apkpatch_z_deflatePending
#  define deflatePrime          apkpatch_z_deflatePrime
#  define deflateReset          apkpatch_z_deflateReset
#  define deflateResetKeep      apkpatch_z_deflateResetKeep
#  define deflateSetDictionary  apkpatch_z_deflateSetDictionary
#  define deflateSetHeader      apkpatch_z_deflateSetHeader
#  define deflateTune           apkpatch_z_deflateTune
#  define deflate_copyright     apkpatch_z_deflate_copyright
#  define get_crc_table         apkpatch_z_get_crc_table
#  ifndef Z_SOLO
#    define gz_error              apkpatch_z_gz_error
#    define gz_intmax             apkpatch_z_gz_intmax
#    define gz_strwinerror        apkpatch_z_gz_strwinerror
#    define gzbuffer              apkpatch_z_gzbuffer
#    define gzclearerr            apkpatch_z_gzclearerr
#    define gzclose               apkpatch_z_gzclose
#    define gzclose_r             apkpatch_z_gzclose_r
#    define gzclose_w             apkpatch_z_gzclose_w
#    define gzdirect              apkpatch_z_gzdirect
#    define gzdopen               apkpatch_z_gzdopen
#    define gzeof                 apkpatch_z_gzeof
#    define gzerror               apkpatch_z_gzerror
#    define gzflush               apkpatch_z_gzflush
#    define gzfread               apkpatch_z_gzfread
#    define gzfwrite              apkpatch_z_gzfwrite
#    define gzgetc                apkpatch_z_gzgetc
#    define gzgetc_               apkpatch_z_gzgetc_
#    define gzgets                apkpatch_z_gzgets
#    define gzoffset              apkpatch_z_gzoffset
#    define gzoffset64            apkpatch_z_gzoffset64
#    define gzopen                apkpatch_z_gzopen
#    define gzopen64              apkpatch_z_gzopen64
#    ifdef _WIN32
#      define gzopen_w              apkpatch_z_gzopen_w
#    endif
#    define gzprintf              apkpatch_z_gzprintf
#    define gzputc                apkpatch_z_gzputc
#    define gzputs                apkpatch_z_gzputs
#    define gzread                apkpatch_z_gzread
#    define gzrewind              apkpatch_z_gzrewind
#    define gzseek                apkpatch_z_gzseek
#    define gzseek64              apkpatch_z_gzseek64
#    define gzsetparams           apkpatch_z_gzsetparams
#    define gztell                apkpatch_z_gztell
#    define gztell64              apkpatch_z_gztell64
#    define gzungetc              apkpatch_z_gzungetc
#    define gzvprintf             apkpatch_z_gzvprintf
#    define gzwrite               apkpatch_z_gzwrite
#  endif
#  define inflate               apkpatch_z_inflate
#  define inflateBack           apkpatch_z_inflateBack
#  define inflateBackEnd        apkpatch_z_inflateBackEnd
#  define inflateBackInit       z_inflateBackInit
#  define inflateBackInit_      apkpatch_z_inflateBackInit_
#  define inflateCodesUsed      apkpatch_z_inflateCodesUsed
#  define inflateCopy           apkpatch_z_inflateCopy
#  define inflateEnd            apkpatch_z_inflateEnd
#  define inflateGetDictionary  apkpatch_z_inflateGetDictionary
#  define inflateGetHeader      apkpatch_z_inflateGetHeader
#  define inflateInit           z_inflateInit
#  define inflateInit2          z_inflateInit2
#  define inflateInit2_         apkpatch_z_inflateInit2_
#  define inflateInit_          apkpatch_z_inflateInit_
#  define inflateMark           apkpatch_z_inflateMark
#  define inflatePrime          apkpatch_z_inflatePrime
#  define inflateReset          apkpatch_z_inflateReset
#  define inflateReset2         apkpatch_z_inflateReset2
#  define inflateResetKeep      apkpatch_z_inflateResetKeep
#  define inflateSetDictionary  apkpatch_z_inflateSetDictionary
#  define inflateSync           apkpatch_z_inflateSync
#  define inflateSyncPoint      apkpatch_z_inflateSyncPoint
#  define inflateUndermine      apkpatch_z_inflateUndermine
#  define inflateValidate       apkpatch_z_inflateValidate
#  define inflate_copyright     apkpatch_z_inflate_copyright
#  define inflate_fast          apkpatch_z_inflate_fast
#  define inflate_table         apkpatch_z_inflate_table
#  ifndef Z_SOLO
#    define uncompress            apkpatch_z_uncompress
#    define uncompress2           apkpatch_z_uncompress2
#  endif
#  define zError                apkpatch_z_zError
#  ifndef Z_SOLO
#    define zcalloc               apkpatch_z_zcalloc
#    define zcfree                apkpatch_z_zcfree
#  endif
#  define zlibCompileFlags      apkpatch_z_zlibCompileFlags
#  define zlibVersion           apkpatch_z_zlibVersion

/* all zlib typedefs in zlib.h and zconf.h */
#  define Byte                  apkpatch_z_Byte
#  define Bytef                 apkpatch_z_Bytef
#  define alloc_func            apkpatch_z_alloc_func
#  define charf                 apkpatch_z_charf
#  define free_func             apkpatch_z_free_func
#  ifndef Z_SOLO
#    define gzFile                apkpatch_z_gzFile
#  endif
#  define gz_header             apkpatch_z_gz_header
#  define gz_headerp            apkpatch_z_gz_headerp
#  define in_func               apkpatch_z_in_func
#  define intf                  apkpatch_z_intf
#  define out_func              apkpatch_z_out_func
#  define uInt                  apkpatch_z_uInt
#  define uIntf                 apkpatch_z_uIntf
#  define uLong                 apkpatch_z_uLong
#  define uLongf                apkpatch_z_uLongf
#  define voidp                 apkpatch_z_voidp
#  define voidpc                apkpatch_z_voidpc
#  define voidpf                apkpatch_z_voidpf

/* all zlib structs in zlib.h and zconf.h */
#  define gz_header_s           apkpatch_z_gz_header_s
#  define internal_state        apkpatch_z_internal_state

#endif

#if defined(__MSDOS__) && !defined(MSDOS)
#  define MSDOS
#endif
#if (defined(OS_2) || defined(__OS2__)) && !defined(OS2)
#  define OS2
#endif
#if defined(_WINDOWS) && !defined(WINDOWS)
#  define WINDOWS
#endif
#if defined(_WIN32) || defined(_WIN32_WCE) || defined(__WIN32__)
#  ifndef WIN32
#    define WIN32
#  endif
#endif
#if (defined(MSDOS) || defined(OS2) || defined(WINDOWS)) && !defined(WIN32)
#  if !defined(__GNUC__) && !defined(__FLAT__) && !defined(__386__)
#    ifndef SYS16BIT
#      define SYS16BIT
#    endif
#  endif
#endif

/*
 * Compile with -DMAXSEG_64K if the alloc function cannot allocate more
 * than 64k bytes at a time (needed on systems with 16-bit int).
 */
#ifdef SYS16BIT
#  define MAXSEG_64K
#endif
#ifdef MSDOS
#  define UNALIGNED_OK
#endif

#ifdef __STDC_VERSION__
#  ifndef STDC
#    define STDC
#  endif
#  if __STDC_VERSION__ >= 199901L
#    ifndef STDC99
#      define STDC99
#    endif
#  endif
#endif
#if !defined(STDC) && (defined(__STDC__) || defined(__cplusplus))
#  define STDC
#endif
#if !defined(STDC) && (defined(__GNUC__) || defined(__BORLANDC__))
#  define STDC
#endif
#if !defined(STDC) && (defined(MSDOS) || defined(WINDOWS) || defined(WIN32))
#  define STDC
#endif
#if !defined(STDC) && (defined(OS2) || defined(__HOS_AIX__))
#  define STDC
#endif

#if defined(__OS400__) && !defined(STDC)    /* iSeries (formerly AS/400). */
#  define STDC
#endif

#ifndef STDC
#  ifndef const /* cannot use !defined(STDC) && !defined(const) on Mac */
#    define const       /* note: need a more gentle solution here */
#  endif
#endif

#if defined(ZLIB_CONST) && !defined(z_const)
#  define z_const const
#else
#  define z_const
#endif

#ifdef Z_SOLO
   typedef unsigned long z_size_t;
#else
#  define z_longlong long long
#  if defined(NO_SIZE_T)
     typedef unsigned NO_SIZE_T z_size_t;
#  elif defined(STDC)
#    include <stddef.h>
     typedef size_t z_size_t;
#  else
     typedef unsigned long z_size_t;
#  endif
#  undef z_longlong
#endif

/* Maximum value for memLevel in deflateInit2 */
#ifndef MAX_MEM_LEVEL
#  ifdef MAXSEG_64K
#    define MAX_MEM_LEVEL 8
#  else
#    define MAX_MEM_LEVEL 9
#  endif
#endif

/* Maximum value for windowBits in deflateInit2 and inflateInit2.
 * WARNING: reducing MAX_WBITS makes minigzip unable to extract .gz files
 * created by gzip. (Files created by minigzip can still be extracted by
 * gzip.)
 */
#ifndef MAX_WBITS
#  define MAX_WBITS   15 /* 32K LZ77 window */
#endif

/* The memory requirements for deflate are (in bytes):
            (1 << (windowBits+2)) +  (1 << (memLevel+9))
 that is: 128K for windowBits=15  +  128K for memLevel = 8  (default values)
 plus a few kilobytes for small objects. For example, if you want to reduce
 the default memory requirements from 256K to 128K, compile with
     make CFLAGS="-O -DMAX_WBITS=14 -DMAX_MEM_LEVEL=7"
 Of course this will generally degrade compression (there's no free lunch).

   The memory requirements for inflate are (in bytes) 1 << windowBits
 that is, 32K for windowBits=15 (default value) plus about 7 kilobytes
 for small objects.
*/

                        /* Type declarations */

#ifndef OF /* function prototypes */
#  ifdef STDC
#    define OF(args)  args
#  else
#    define OF(args)  ()
#  endif
#endif

#ifndef Z_ARG /* function prototypes for stdarg */
#  if defined(STDC) || defined(Z_HAVE_STDARG_H)
#    define Z_ARG(args)  args
#  else
#    define Z_ARG(args)  ()
#  endif
#endif

/* The following definitions for FAR are needed only for MSDOS mixed
 * model programming (small or medium model with some far allocations).
 * This was tested only with MSC; for other MSDOS compilers you may have
 * to define NO_MEMCPY in zutil.h.  If you don't need the mixed model,
 * just define FAR to be empty.
 */
#ifdef SYS16BIT
#  if defined(M_I86SM) || defined(M_I86MM)
     /* MSC small or medium model */
#    define SMALL_MEDIUM
#    ifdef _MSC_VER
#      define FAR _far
#    else
#      define FAR far
#    endif
#  endif
#  if (defined(__SMALL__) || defined(__MEDIUM__))
     /* Turbo C small or medium model */
#    define SMALL_MEDIUM
#    ifdef __BORLANDC__
#      define FAR _far
#    else
#      define FAR far
#    endif
#  endif
#endif

#if defined(WINDOWS) || defined(WIN32)
   /* If building or using zlib as a DLL, define ZLIB_DLL.
    * This is not mandatory, but it offers a little performance increase.
    */
#  ifdef ZLIB_DLL
#    if defined(WIN32) && (!defined(__BORLANDC__) || (__BORLANDC__ >= 0x500))
#      ifdef ZLIB_INTERNAL
#        define ZEXTERN extern __declspec(dllexport)
#      else
#        define ZEXTERN extern __declspec(dllimport)
#      endif
#    endif
#  endif  /* ZLIB_DLL */
   /* If building or using zlib with the WINAPI/WINAPIV calling convention,
    * define ZLIB_WINAPI.
    * Caution: the standard ZLIB1.DLL is NOT compiled using ZLIB_WINAPI.
    */
#  ifdef ZLIB_WINAPI
#    ifdef FAR
#      undef FAR
#    endif
#    ifndef WIN32_LEAN_AND_MEAN
#      define WIN32_LEAN_AND_MEAN
#    endif
#    include <windows.h>
     /* No need for _export, use ZLIB.DEF instead. */
     /* For complete Windows compatibility, use WINAPI, not __stdcall. */
#    define ZEXPORT WINAPI
#    ifdef WIN32
#      define ZEXPORTVA WINAPIV
#    else
#      define ZEXPORTVA FAR CDECL
#    endif
#  endif
#endif

#if defined (__BEOS__)
#  ifdef ZLIB_DLL
#    ifdef ZLIB_INTERNAL
#      define ZEXPORT   __declspec(dllexport)
#      define ZEXPORTVA __declspec(dllexport)
#    else
#      define ZEXPORT   __declspec(dllimport)
#      define ZEXPORTVA __declspec(dllimport)
#    endif
#  endif
#endif

#ifndef ZEXTERN
#  define ZEXTERN extern
#endif
#ifndef ZEXPORT
#  define ZEXPORT
#endif
#ifndef ZEXPORTVA
#  define ZEXPORTVA
#endif

#ifndef FAR
#  define FAR
#endif

#if !defined(__MACTYPES__)
typedef unsigned char  Byte;  /* 8 bits */
#endif
typedef unsigned int   uInt;  /* 16 bits or more */
typedef unsigned long  uLong; /* 32 bits or more */

#ifdef SMALL_MEDIUM
   /* Borland C/C++ and some old MSC versions ignore FAR inside typedef */
#  define Bytef Byte FAR
#else
   typedef Byte  FAR Bytef;
#endif
typedef char  FAR charf;
typedef int   FAR intf;
typedef uInt  FAR uIntf;
typedef uLong FAR uLongf;

#ifdef STDC
   typedef void const *voidpc;
   typedef void FAR   *voidpf;
   typedef void       *voidp;
#else
   typedef Byte const *voidpc;
   typedef Byte FAR   *voidpf;
   typedef Byte       *voidp;
#endif

#if !defined(Z_U4) && !defined(Z_SOLO) && defined(STDC)
#  include <limits.h>
#  if (UINT_MAX == 0xffffffffUL)
#    define Z_U4 unsigned
#  elif (ULONG_MAX == 0xffffffffUL)
#    define Z_U4 unsigned long
#  elif (USHRT_MAX == 0xffffffffUL)
#    define Z_U4 unsigned short
#  endif
#endif

#ifdef Z_U4
   typedef Z_U4 z_crc_t;
#else
   typedef unsigned long z_crc_t;
#endif

#ifdef HAVE_UNISTD_H    /* may be set to #if 1 by ./configure */
#  define Z_HAVE_UNISTD_H
#endif

#ifdef HAVE_STDARG_H    /* may be set to #if 1 by ./configure */
#  define Z_HAVE_STDARG_H
#endif

#ifdef STDC
#  ifndef Z_SOLO
#    include <sys/types.h>      /* for off_t */
#  endif
#endif

#if defined(STDC) || defined(Z_HAVE_STDARG_H)
#  ifndef Z_SOLO
#    include <stdarg.h>         /* for va_list */
#  endif
#endif

#ifdef _WIN32
#  ifndef Z_SOLO
#    include <stddef.h>         /* for wchar_t */
#  endif
#endif

/* a little trick to accommodate both "#define _LARGEFILE64_SOURCE" and
 * "#define _LARGEFILE64_SOURCE 1" as requesting 64-bit operations, (even
 * though the former does not conform to the LFS document), but considering
 * both "#undef _LARGEFILE64_SOURCE" and "#define _LARGEFILE64_SOURCE 0" as
 * equivalently requesting no 64-bit operations
 */
#if defined(_LARGEFILE64_SOURCE) && -_LARGEFILE64_SOURCE - -1 == 1
#  undef _LARGEFILE64_SOURCE
#endif

#ifndef Z_HAVE_UNISTD_H
#  ifdef __WATCOMC__
#    define Z_HAVE_UNISTD_H
#  endif
#endif
#ifndef Z_HAVE_UNISTD_H
#  if defined(_LARGEFILE64_SOURCE) && !defined(_WIN32)
#    define Z_HAVE_UNISTD_H
#  endif
#endif
#ifndef Z_SOLO
#  if defined(Z_HAVE_UNISTD_H)
#    include <unistd.h>         /* for SEEK_*, off_t, and _LFS64_LARGEFILE */
#    ifdef VMS
#      include <unixio.h>       /* for off_t */
#    endif
#    ifndef z_off_t
#      define z_off_t off_t
#    endif
#  endif
#endif

#if defined(_LFS64_LARGEFILE) && _LFS64_LARGEFILE-0
#  define Z_LFS64
#endif

#if defined(_LARGEFILE64_SOURCE) && defined(Z_LFS64)
#  define Z_LARGE64
#endif

#if defined(_FILE_OFFSET_BITS) && _FILE_OFFSET_BITS-0 == 64 && defined(Z_LFS64)
#  define Z_WANT64
#endif

#if !defined(SEEK_SET) && !defined(Z_SOLO)
#  define SEEK_SET        0       /* Seek from beginning of file.  */
#  define SEEK_CUR        1       /* Seek from current position.  */
#  define SEEK_END        2       /* Set file pointer to EOF plus "offset" */
#endif

#ifndef z_off_t
#  define z_off_t long
#endif

#if !defined(_WIN32) && defined(Z_LARGE64)
#  define z_off64_t off64_t
#else
#  if defined(_WIN32) && !defined(__GNUC__) && !defined(Z_SOLO)
#    define z_off64_t __int64
#  else
#    define z_off64_t z_off_t
#  endif
#endif

/* MVS linker does not support external names larger than 8 bytes */
#if defined(__MVS__)
  #pragma map(deflateInit_,"DEIN")
  #pragma map(deflateInit2_,"DEIN2")
  #pragma map(deflateEnd,"DEEND")
  #pragma map(deflateBound,"DEBND")
  #pragma map(inflateInit_,"ININ")
  #pragma map(inflateInit2_,"ININ2")
  #pragma map(inflateEnd,"INEND")
  #pragma map(inflateSync,"INSY")
  #pragma map(inflateSetDictionary,"INSEDI")
  #pragma map(compressBound,"CMBND")
  #pragma map(inflate_table,"INTABL")
  #pragma map(inflate_fast,"INFA")
  #pragma map(inflate_copyright,"INCOPY")
#endif

#endif /* ZCONF_H */
