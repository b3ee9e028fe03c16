/*
 * The counted printf and scanf families on the host's streams.
 *
 * Formatting and scanning come from the musl sources the ziglang wheel ships
 * (cbuild/build/libc.py lists them); they work on musl's own FILE. Here a musl FILE
 * stands in for a stream of the host's C library: what printf formats is written to
 * the host's stream with its fwrite, what scanf reads comes from its getc, one
 * character at a time, and the one character scanf looks ahead and does not use goes
 * back with ungetc. The host's buffering, locking and ordering stay as they are; only
 * the formatting and the conversions are counted.
 *
 * Compiled against musl's internal headers. A name __instrbudget_host_X becomes X in
 * the build (the host's function), and the build renames musl's own external names
 * so that none of them meets the host's.
 */
#define _GNU_SOURCE /* vasprintf */
#include "stdio_impl.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>

#define LIBC(name) hidden __instrbudget_libc_##name
#define CALL(name) __instrbudget_libc_##name

/* A stream of the host's C library, never looked into. */
typedef struct instrbudget_host_file HOST_FILE;

size_t __instrbudget_host_fwrite(const void *restrict, size_t, size_t, HOST_FILE *restrict);
int __instrbudget_host_getc(HOST_FILE *);
int __instrbudget_host_ungetc(int, HOST_FILE *);
_Noreturn void __instrbudget_host___chk_fail(void);
extern HOST_FILE *__instrbudget_host_stdout;
extern HOST_FILE *__instrbudget_host_stdin;

/* Only the stack streams below reach musl's code, all with lock -1: nothing locks. */
int __lockfile(FILE *f) { return 0; }
void __unlockfile(FILE *f) {}
void __stdio_exit_needed(void) {}

static size_t host_write(FILE *f, const unsigned char *s, size_t len)
{
	size_t pending = f->wpos - f->wbase;
	if (pending && __instrbudget_host_fwrite(f->wbase, 1, pending, f->cookie) != pending) goto fail;
	if (len && __instrbudget_host_fwrite(s, 1, len, f->cookie) != len) goto fail;
	f->wend = f->buf + f->buf_size;
	f->wpos = f->wbase = f->buf;
	return len;
fail:
	f->wpos = f->wbase = f->wend = 0;
	f->flags |= F_ERR;
	return 0;
}

/* One character at a time: the stream has no buffer, so musl's __uflow asks for one (len 1). */
static size_t host_read(FILE *f, unsigned char *buf, size_t len)
{
	int c = __instrbudget_host_getc(f->cookie);
	f->rpos = f->rend = f->buf;
	if (c == EOF) {
		f->flags |= F_EOF;
		return 0;
	}
	buf[0] = c;
	return 1;
}

int LIBC(vfprintf)(HOST_FILE *restrict out, const char *restrict fmt, va_list ap)
{
	/* No buffer of its own (vfprintf brings one and flushes it); a non-null pointer
	 * tells vfprintf that the stream is set up. */
	unsigned char none[1];
	FILE f = { .buf = none, .write = host_write, .cookie = out, .lock = -1, .lbf = EOF };
	return vfprintf(&f, fmt, ap);
}

int LIBC(vfscanf)(HOST_FILE *restrict in, const char *restrict fmt, va_list ap)
{
	/* Room before the buffer: scanf puts back there the character it looked ahead. */
	unsigned char room[UNGET];
	FILE f = { .buf = room + UNGET, .read = host_read, .cookie = in, .lock = -1 };
	int matches = vfscanf(&f, fmt, ap);
	while (f.rpos && f.rpos < f.rend) __instrbudget_host_ungetc(*--f.rend, in);
	return matches;
}

int LIBC(vprintf)(const char *restrict fmt, va_list ap) { return CALL(vfprintf)(__instrbudget_host_stdout, fmt, ap); }
int LIBC(vscanf)(const char *restrict fmt, va_list ap) { return CALL(vfscanf)(__instrbudget_host_stdin, fmt, ap); }

int LIBC(printf)(const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = CALL(vfprintf)(__instrbudget_host_stdout, fmt, ap);
	va_end(ap);
	return n;
}

int LIBC(fprintf)(HOST_FILE *restrict out, const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = CALL(vfprintf)(out, fmt, ap);
	va_end(ap);
	return n;
}

int LIBC(scanf)(const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = CALL(vfscanf)(__instrbudget_host_stdin, fmt, ap);
	va_end(ap);
	return n;
}

int LIBC(fscanf)(HOST_FILE *restrict in, const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = CALL(vfscanf)(in, fmt, ap);
	va_end(ap);
	return n;
}

/* glibc's _FORTIFY_SOURCE names: the same formatting, and a buffer overflow ends the
 * program as glibc's would. */
int LIBC(__vfprintf_chk)(HOST_FILE *restrict out, int flag, const char *restrict fmt, va_list ap)
{
	return CALL(vfprintf)(out, fmt, ap);
}

int LIBC(__vprintf_chk)(int flag, const char *restrict fmt, va_list ap)
{
	return CALL(vfprintf)(__instrbudget_host_stdout, fmt, ap);
}

int LIBC(__printf_chk)(int flag, const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = CALL(vfprintf)(__instrbudget_host_stdout, fmt, ap);
	va_end(ap);
	return n;
}

int LIBC(__fprintf_chk)(HOST_FILE *restrict out, int flag, const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = CALL(vfprintf)(out, fmt, ap);
	va_end(ap);
	return n;
}

int LIBC(__vsnprintf_chk)(char *restrict s, size_t n, int flag, size_t size, const char *restrict fmt, va_list ap)
{
	if (n > size) __instrbudget_host___chk_fail();
	return vsnprintf(s, n, fmt, ap);
}

int LIBC(__snprintf_chk)(char *restrict s, size_t n, int flag, size_t size, const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = CALL(__vsnprintf_chk)(s, n, flag, size, fmt, ap);
	va_end(ap);
	return r;
}

int LIBC(__vsprintf_chk)(char *restrict s, int flag, size_t size, const char *restrict fmt, va_list ap)
{
	if (size == 0) __instrbudget_host___chk_fail();
	int n = vsnprintf(s, size, fmt, ap);
	if (n >= 0 && (size_t)n >= size) __instrbudget_host___chk_fail();
	return n;
}

int LIBC(__sprintf_chk)(char *restrict s, int flag, size_t size, const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = CALL(__vsprintf_chk)(s, flag, size, fmt, ap);
	va_end(ap);
	return n;
}

int LIBC(__vasprintf_chk)(char **s, int flag, const char *restrict fmt, va_list ap)
{
	return vasprintf(s, fmt, ap);
}

int LIBC(__asprintf_chk)(char **s, int flag, const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(s, fmt, ap);
	va_end(ap);
	return n;
}

/* getline and getdelim: the line grows in the counted heap (whose chunks the host's realloc
 * cannot take, so a buffer the program allocated would crash the host's getline), the
 * characters come from the host's getc. */
ssize_t LIBC(getdelim)(char **restrict line, size_t *restrict cap, int delim, HOST_FILE *restrict in)
{
	size_t n = 0;
	int c;
	if (!line || !cap || !in) {
		errno = EINVAL;
		return -1;
	}
	if (!*line) *cap = 0;
	for (;;) {
		c = __instrbudget_host_getc(in);
		if (c == EOF) break;
		if (n + 2 > *cap) { /* room for the character and the terminator */
			size_t grown = *cap > 64 ? *cap * 2 : 128;
			if (n + 2 > SSIZE_MAX || grown > SSIZE_MAX) {
				errno = EOVERFLOW;
				return -1;
			}
			char *bigger = realloc(*line, grown);
			if (!bigger) {
				errno = ENOMEM;
				return -1;
			}
			*line = bigger;
			*cap = grown;
		}
		(*line)[n++] = (char)c;
		if (c == (unsigned char)delim) break; /* as a char: a NUL or a byte above 127 ends a line too */
	}
	if (*line && (n || *cap)) (*line)[n] = 0;
	return n ? (ssize_t)n : -1;
}

ssize_t LIBC(getline)(char **restrict line, size_t *restrict cap, HOST_FILE *restrict in)
{
	return CALL(getdelim)(line, cap, '\n', in);
}

ssize_t LIBC(__getdelim)(char **restrict line, size_t *restrict cap, int delim, HOST_FILE *restrict in)
{
	return CALL(getdelim)(line, cap, delim, in);
}
