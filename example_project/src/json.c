/*
 * json.c - a small JSON (RFC 8259) tokenizer and validator.
 *
 * The parser is a recursive-descent validator that never allocates.  The
 * recursion depth is bounded by MK_JSON_MAX_DEPTH, so the stack usage is
 * bounded too.  While validating it counts tokens and tracks the deepest
 * nesting level; the two public functions just report one of the two.
 */
#include "minikit.h"

#include <limits.h>

/* Parser state shared by all helpers. */
typedef struct {
    const unsigned char *p;   /* next unread byte          */
    const unsigned char *end; /* one past the last byte    */
    int tokens;               /* tokens seen so far        */
    int depth;                /* current nesting depth     */
    int max_depth;            /* deepest nesting seen      */
} json_parser;

/* Forward declaration: values nest recursively. */
static int parse_value(json_parser *ps);

/* Skip the four JSON whitespace characters. */
static void skip_ws(json_parser *ps)
{
    while (ps->p < ps->end) {
        unsigned char c = *ps->p;
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            break;
        }
        ps->p++;
    }
}

/* Record one token; fails (returns 0) if the count would overflow int. */
static int add_token(json_parser *ps)
{
    if (ps->tokens == INT_MAX) {
        return 0;
    }
    ps->tokens++;
    return 1;
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* string: '"' chars '"' with the escapes \" \\ \/ \b \f \n \r \t \uXXXX.
 * Raw control characters (< 0x20) are not allowed inside strings.
 * Bytes >= 0x80 are accepted as-is (no UTF-8 validation). */
static int parse_string(json_parser *ps)
{
    ps->p++; /* opening quote, checked by the caller */
    while (ps->p < ps->end) {
        unsigned char c = *ps->p++;
        if (c == '"') {
            return add_token(ps);
        }
        if (c < 0x20) {
            return 0;
        }
        if (c == '\\') {
            if (ps->p >= ps->end) {
                return 0;
            }
            c = *ps->p++;
            switch (c) {
            case '"': case '\\': case '/':
            case 'b': case 'f': case 'n': case 'r': case 't':
                break;
            case 'u':
                for (int i = 0; i < 4; i++) {
                    if (ps->p >= ps->end || !is_hex(*ps->p)) {
                        return 0;
                    }
                    ps->p++;
                }
                break;
            default:
                return 0;
            }
        }
    }
    return 0; /* unterminated string */
}

/* Consume one or more digits; returns 0 if there is not at least one. */
static int parse_digits(json_parser *ps)
{
    if (ps->p >= ps->end || !is_digit(*ps->p)) {
        return 0;
    }
    while (ps->p < ps->end && is_digit(*ps->p)) {
        ps->p++;
    }
    return 1;
}

/* number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int parse_number(json_parser *ps)
{
    if (*ps->p == '-') {
        ps->p++;
    }
    if (ps->p >= ps->end) {
        return 0;
    }
    if (*ps->p == '0') {
        ps->p++; /* a leading zero may not be followed by more digits */
    } else if (!parse_digits(ps)) {
        return 0;
    }
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!parse_digits(ps)) {
            return 0;
        }
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) {
            ps->p++;
        }
        if (!parse_digits(ps)) {
            return 0;
        }
    }
    /* "01" leaves '1' unread here; the caller then sees an unexpected byte. */
    return add_token(ps);
}

/* Match the literal word @p lit (true / false / null). */
static int parse_literal(json_parser *ps, const char *lit)
{
    for (const char *q = lit; *q != '\0'; q++) {
        if (ps->p >= ps->end || *ps->p != (unsigned char)*q) {
            return 0;
        }
        ps->p++;
    }
    return add_token(ps);
}

/* Enter an array/object: bump the depth and enforce the limit. */
static int enter(json_parser *ps)
{
    if (ps->depth >= MK_JSON_MAX_DEPTH) {
        return 0;
    }
    ps->depth++;
    if (ps->depth > ps->max_depth) {
        ps->max_depth = ps->depth;
    }
    return add_token(ps); /* the opening bracket */
}

/* array: '[' ws ']' | '[' value (',' value)* ']'   (at the '[' on entry) */
static int parse_array(json_parser *ps)
{
    ps->p++;
    if (!enter(ps)) {
        return 0;
    }
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        ps->depth--;
        return add_token(ps);
    }
    for (;;) {
        if (!parse_value(ps)) {
            return 0;
        }
        skip_ws(ps);
        if (ps->p >= ps->end) {
            return 0;
        }
        unsigned char c = *ps->p++;
        if (!add_token(ps)) { /* ',' or ']' */
            return 0;
        }
        if (c == ']') {
            ps->depth--;
            return 1;
        }
        if (c != ',') {
            return 0;
        }
    }
}

/* object: '{' ws '}' | '{' string ':' value (',' string ':' value)* '}' */
static int parse_object(json_parser *ps)
{
    ps->p++;
    if (!enter(ps)) {
        return 0;
    }
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        ps->depth--;
        return add_token(ps);
    }
    for (;;) {
        /* key */
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"' || !parse_string(ps)) {
            return 0;
        }
        /* ':' */
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            return 0;
        }
        ps->p++;
        if (!add_token(ps)) {
            return 0;
        }
        /* value */
        if (!parse_value(ps)) {
            return 0;
        }
        /* ',' or '}' */
        skip_ws(ps);
        if (ps->p >= ps->end) {
            return 0;
        }
        unsigned char c = *ps->p++;
        if (!add_token(ps)) {
            return 0;
        }
        if (c == '}') {
            ps->depth--;
            return 1;
        }
        if (c != ',') {
            return 0;
        }
    }
}

/* value: optional leading whitespace, then any JSON value. */
static int parse_value(json_parser *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end) {
        return 0;
    }
    switch (*ps->p) {
    case '{': return parse_object(ps);
    case '[': return parse_array(ps);
    case '"': return parse_string(ps);
    case 't': return parse_literal(ps, "true");
    case 'f': return parse_literal(ps, "false");
    case 'n': return parse_literal(ps, "null");
    default:
        if (*ps->p == '-' || is_digit(*ps->p)) {
            return parse_number(ps);
        }
        return 0;
    }
}

/* Validate a whole document: one value plus optional surrounding
 * whitespace.  Returns 1 and fills *ps on success, 0 on any error. */
static int validate(const char *text, size_t len, json_parser *ps)
{
    if (text == NULL) {
        return 0; /* NULL is never a document (covers len == 0, too) */
    }
    ps->p = (const unsigned char *)text;
    ps->end = ps->p + len;
    ps->tokens = 0;
    ps->depth = 0;
    ps->max_depth = 0;
    if (!parse_value(ps)) {
        return 0;
    }
    skip_ws(ps);
    return ps->p == ps->end; /* reject trailing garbage */
}

int mk_json_count_tokens(const char *text, size_t len)
{
    json_parser ps;
    return validate(text, len, &ps) ? ps.tokens : -1;
}

int mk_json_max_depth(const char *text, size_t len)
{
    json_parser ps;
    return validate(text, len, &ps) ? ps.max_depth : -1;
}
