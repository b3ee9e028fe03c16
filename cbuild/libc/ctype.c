/*
 * Character classes in the C locale: the functions, and the tables glibc's and musl's
 * headers read through __ctype_b_loc and friends (glibc's layout, which musl keeps for
 * compatibility). The locale a program sets does not change them: the count and the
 * result are the same on every host.
 */

/* glibc's class bits (the high byte holds bits 0-7 on a little-endian host's table). */
#define IB_BIT(bit) ((bit) < 8 ? (1 << (bit)) << 8 : (1 << (bit)) >> 8)
#define IB_UPPER(c) ((c) >= 'A' && (c) <= 'Z')
#define IB_LOWER(c) ((c) >= 'a' && (c) <= 'z')
#define IB_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IB_ALPHA(c) (IB_UPPER(c) || IB_LOWER(c))
#define IB_XDIGIT(c) (IB_DIGIT(c) || ((c) >= 'a' && (c) <= 'f') || ((c) >= 'A' && (c) <= 'F'))
#define IB_SPACE(c) ((c) == ' ' || ((c) >= '\t' && (c) <= '\r'))
#define IB_PRINT(c) ((c) >= ' ' && (c) <= '~')
#define IB_GRAPH(c) ((c) > ' ' && (c) <= '~')
#define IB_BLANK(c) ((c) == ' ' || (c) == '\t')
#define IB_CNTRL(c) (((c) >= 0 && (c) < ' ') || (c) == 127)
#define IB_PUNCT(c) (IB_GRAPH(c) && !IB_ALPHA(c) && !IB_DIGIT(c))
#define IB_CLASSES(c)                                                                                          \
	(IB_UPPER(c) * IB_BIT(0) | IB_LOWER(c) * IB_BIT(1) | IB_ALPHA(c) * IB_BIT(2) | IB_DIGIT(c) * IB_BIT(3) |  \
	 IB_XDIGIT(c) * IB_BIT(4) | IB_SPACE(c) * IB_BIT(5) | IB_PRINT(c) * IB_BIT(6) | IB_GRAPH(c) * IB_BIT(7) | \
	 IB_BLANK(c) * IB_BIT(8) | IB_CNTRL(c) * IB_BIT(9) | IB_PUNCT(c) * IB_BIT(10) |                           \
	 (IB_ALPHA(c) || IB_DIGIT(c)) * IB_BIT(11))
/* A negative char other than EOF maps to its unsigned value, as in glibc's tables. */
#define IB_UNSIGNED(c) ((c) < -1 ? (c) + 256 : (c))
#define IB_TOLOWER(c) (IB_UPPER(c) ? (c) + 32 : IB_UNSIGNED(c))
#define IB_TOUPPER(c) (IB_LOWER(c) ? (c) - 32 : IB_UNSIGNED(c))

/* The tables cover -128..255 (a signed char, EOF, an unsigned char). */
#define IB_4(F, b) F(b), F((b) + 1), F((b) + 2), F((b) + 3)
#define IB_16(F, b) IB_4(F, b), IB_4(F, (b) + 4), IB_4(F, (b) + 8), IB_4(F, (b) + 12)
#define IB_64(F, b) IB_16(F, b), IB_16(F, (b) + 16), IB_16(F, (b) + 32), IB_16(F, (b) + 48)
#define IB_384(F) IB_64(F, -128), IB_64(F, -64), IB_64(F, 0), IB_64(F, 64), IB_64(F, 128), IB_64(F, 192)
#define IB_CLASS_ENTRY(c) ((unsigned short)((c) >= 0 && (c) < 128 ? IB_CLASSES(c) : 0))

static const unsigned short ib_classes[384] = {IB_384(IB_CLASS_ENTRY)};
static const int32_t ib_tolower_table[384] = {IB_384(IB_TOLOWER)};
static const int32_t ib_toupper_table[384] = {IB_384(IB_TOUPPER)};
static const unsigned short *const ib_classes_at = ib_classes + 128;
static const int32_t *const ib_tolower_at = ib_tolower_table + 128;
static const int32_t *const ib_toupper_at = ib_toupper_table + 128;

const unsigned short **LIBC(__ctype_b_loc)(void) { return (const unsigned short **)&ib_classes_at; }
const int32_t **LIBC(__ctype_tolower_loc)(void) { return (const int32_t **)&ib_tolower_at; }
const int32_t **LIBC(__ctype_toupper_loc)(void) { return (const int32_t **)&ib_toupper_at; }

static int ib_is(int c, int bit) { return c >= -128 && c < 256 && (ib_classes_at[c] & IB_BIT(bit)) != 0; }

int LIBC(isupper)(int c) { return ib_is(c, 0); }
int LIBC(islower)(int c) { return ib_is(c, 1); }
int LIBC(isalpha)(int c) { return ib_is(c, 2); }
int LIBC(isdigit)(int c) { return ib_is(c, 3); }
int LIBC(isxdigit)(int c) { return ib_is(c, 4); }
int LIBC(isspace)(int c) { return ib_is(c, 5); }
int LIBC(isprint)(int c) { return ib_is(c, 6); }
int LIBC(isgraph)(int c) { return ib_is(c, 7); }
int LIBC(isblank)(int c) { return ib_is(c, 8); }
int LIBC(iscntrl)(int c) { return ib_is(c, 9); }
int LIBC(ispunct)(int c) { return ib_is(c, 10); }
int LIBC(isalnum)(int c) { return ib_is(c, 11); }
int LIBC(isascii)(int c) { return (c & ~0x7f) == 0; }
int LIBC(toascii)(int c) { return c & 0x7f; }
int LIBC(tolower)(int c) { return c >= -128 && c < 256 ? ib_tolower_at[c] : c; }
int LIBC(toupper)(int c) { return c >= -128 && c < 256 ? ib_toupper_at[c] : c; }
