/* Redis's INCRBYFLOAT / HINCRBYFLOAT arithmetic, in the platform's long double, exactly as
 * Redis 7.0 does it: string2ld (util.c) to parse, one long double addition, and ld2string's
 * LD_STR_HUMAN mode ("%.17Lf", trailing zeros trimmed, "-0" printed as "0").
 * Rust has no long double, so this file is the one place that computes in it. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LONG_DOUBLE_CHARS (5 * 1024)

static int string2ld(const char *s, size_t slen, long double *dp) {
    char buf[MAX_LONG_DOUBLE_CHARS];
    char *eptr;
    long double value;
    if (slen == 0 || slen >= sizeof(buf)) return 0;
    memcpy(buf, s, slen);
    buf[slen] = '\0';
    errno = 0;
    value = strtold(buf, &eptr);
    /* Redis 7.0.15's checks, in its order: the whole string (an embedded NUL ends strtold early),
     * no leading space, no overflow to infinity or underflow to zero, no EINVAL, not NaN. */
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' ||
        (size_t)(eptr - buf) != slen ||
        (errno == ERANGE &&
         (value == HUGE_VALL || value == -HUGE_VALL || fpclassify(value) == FP_ZERO)) ||
        errno == EINVAL ||
        isnan(value))
        return 0;
    *dp = value;
    return 1;
}

/* Returns the length written to out (out_len >= MAX_LONG_DOUBLE_CHARS), or
 * -1: a value is not a valid float, -2: the result is NaN or infinite. */
int densekv_incrbyfloat(const char *current, size_t current_len, int has_current,
                        const char *incr, size_t incr_len, char *out, size_t out_len) {
    long double value = 0, by;
    int len;
    if (has_current && !string2ld(current, current_len, &value)) return -1;
    if (!string2ld(incr, incr_len, &by)) return -1;
    value += by;
    if (isnan(value) || isinf(value)) return -2;
    len = snprintf(out, out_len, "%.17Lf", value);
    if (len < 0 || (size_t)len + 1 > out_len) return -1;
    if (strchr(out, '.') != NULL) {
        char *p = out + len - 1;
        while (*p == '0') {
            p--;
            len--;
        }
        if (*p == '.') len--;
    }
    if (len == 2 && out[0] == '-' && out[1] == '0') {
        out[0] = '0';
        len = 1;
    }
    return len;
}

/* A blocking command's timeout in milliseconds, as Redis 7.0's getTimeoutFromObjectOrReply
 * computes it for seconds: string2ld, then (long long) ceill(value * 1000.0). Returns 0 when the
 * text is not a valid float, else 1 with *ms set. A product outside long long's range converts to
 * LLONG_MIN, which is what the x86-64 conversion Redis relies on yields (so 1e17 or inf are
 * "negative" there, and here). */
int densekv_timeout_ms(const char *text, size_t len, long long *ms) {
    long double value, product;
    if (!string2ld(text, len, &value)) return 0;
    product = ceill(value * 1000.0);
    if (product >= -9223372036854775808.0L && product < 9223372036854775808.0L)
        *ms = (long long)product;
    else
        *ms = LLONG_MIN;
    return 1;
}
