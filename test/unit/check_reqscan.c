/* Unit tests: is an HTTP/1.x request here whole? (rp_reqscan.c) */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "rp_reqscan.h"
#include "check_run.h"

static const rp_scan_limits LIM = { 8190, 8190, 100, 65536, 0 };

/* Feed text in pieces of `step` bytes (0: at once); returns the state and
 * how many bytes the request used. */
static rp_scan_state scan(const rp_scan_limits *lim, const char *text, size_t step,
                          size_t *used_total, rp_reqscan *out)
{
    rp_reqscan s;
    size_t len = strlen(text), pos = 0, used;
    rp_scan_state st = RP_SCAN_MORE;

    rp_reqscan_start(&s, lim);
    *used_total = 0;
    while (pos < len) {
        size_t n = step && step < len - pos ? step : len - pos;
        st = rp_reqscan_feed(&s, text + pos, n, &used);
        *used_total += used;
        pos += n;
    }
    if (out) {
        *out = s;
    }
    return st;
}

static void check_scan(const char *text, rp_scan_state want, rp_scan_why why,
                       size_t want_used)
{
    size_t steps[] = { 0, 1, 2, 7 };
    unsigned i;

    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        rp_reqscan s;
        size_t used;
        rp_scan_state st = scan(&LIM, text, steps[i], &used, &s);
        ck_assert_msg(st == want, "step %zu: state %d, want %d", steps[i], st, want);
        ck_assert_msg(s.why == why, "step %zu: why %d, want %d", steps[i], s.why, why);
        if (want != RP_SCAN_MORE) {
            ck_assert_msg(used == want_used, "step %zu: used %zu, want %zu", steps[i],
                          used, want_used);
        }
    }
}

#define GET "GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n"

START_TEST(get_whole_in_any_pieces)
{
    check_scan(GET, RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, strlen(GET));
    check_scan("GET / HTTP/1.1\nHost: x\n\n", RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, 24);
}
END_TEST

START_TEST(pipelined_bytes_are_not_used)
{
    check_scan(GET GET, RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, strlen(GET));
    check_scan(GET "GE", RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, strlen(GET));
}
END_TEST

START_TEST(incomplete_head_waits)
{
    check_scan("GET / HTTP/1.1\r\nHost: x\r\n", RP_SCAN_MORE, RP_SCAN_WHY_NONE, 0);
    check_scan("GET / HTTP/1.1\r\nHost: x\r\nX-a: b\r", RP_SCAN_MORE, RP_SCAN_WHY_NONE, 0);
    check_scan("GET / HTTP/1.1", RP_SCAN_MORE, RP_SCAN_WHY_NONE, 0);
}
END_TEST

START_TEST(blank_lines_before_a_request)
{
    check_scan("\r\n\n\r\n" GET, RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, 5 + strlen(GET));
    check_scan("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n" GET, RP_SCAN_HANDOVER,
               RP_SCAN_WHY_BLANKS, 22);
}
END_TEST

START_TEST(http09_has_no_fields)
{
    check_scan("GET /a.txt\r\nmore", RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, 12);
}
END_TEST

START_TEST(small_body_is_waited_for)
{
    const char *head = "POST /x HTTP/1.1\r\nContent-Length:  5 \r\n\r\n";
    char text[256];

    check_scan(head, RP_SCAN_MORE, RP_SCAN_WHY_NONE, 0);
    snprintf(text, sizeof(text), "%sabc", head);
    check_scan(text, RP_SCAN_MORE, RP_SCAN_WHY_NONE, 0);
    snprintf(text, sizeof(text), "%sabcde" GET, head);
    check_scan(text, RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, strlen(head) + 5);
    check_scan("POST /x HTTP/1.1\r\ncontent-LENGTH: 0\r\n\r\n", RP_SCAN_WHOLE,
               RP_SCAN_WHY_NONE, 39);
}
END_TEST

START_TEST(body_in_body_phase)
{
    rp_reqscan s;
    size_t used;

    ck_assert_int_eq(scan(&LIM, "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\na", 0, &used,
                          &s), RP_SCAN_MORE);
    ck_assert(rp_reqscan_in_body(&s));
    ck_assert_int_eq(scan(&LIM, "POST / HTTP/1.1\r\nContent-Length: 3\r\n", 0, &used, &s),
                     RP_SCAN_MORE);
    ck_assert(!rp_reqscan_in_body(&s));
}
END_TEST

START_TEST(bodies_not_waited_for)
{
    const char *chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    const char *expect = "PUT / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n";
    const char *big = "PUT / HTTP/1.1\r\nContent-Length: 70000\r\n\r\n";

    check_scan(chunked, RP_SCAN_HANDOVER, RP_SCAN_WHY_STREAMED, strlen(chunked));
    check_scan(expect, RP_SCAN_HANDOVER, RP_SCAN_WHY_STREAMED, strlen(expect));
    check_scan(big, RP_SCAN_HANDOVER, RP_SCAN_WHY_SIZE, strlen(big));
    /* An Expect without a body changes nothing. */
    check_scan("GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n", RP_SCAN_WHOLE,
               RP_SCAN_WHY_NONE, 40);
}
END_TEST

START_TEST(framing_httpd_refuses_is_handed_over)
{
    check_scan("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
               RP_SCAN_HANDOVER, RP_SCAN_WHY_FRAMING, 57);
    check_scan("POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\n", RP_SCAN_HANDOVER,
               RP_SCAN_WHY_FRAMING, 39);
    check_scan("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n", RP_SCAN_HANDOVER,
               RP_SCAN_WHY_FRAMING, 39);
    /* Folded into a framing field. */
    check_scan("POST / HTTP/1.1\r\nContent-Length:\r\n 5\r\n\r\n", RP_SCAN_HANDOVER,
               RP_SCAN_WHY_FRAMING, 40);
    /* A field without a colon. */
    check_scan("GET / HTTP/1.1\r\nHost x\r\n\r\n", RP_SCAN_HANDOVER, RP_SCAN_WHY_FRAMING, 26);
}
END_TEST

START_TEST(folded_ordinary_field_is_fine)
{
    check_scan("GET / HTTP/1.1\r\nX-a: b\r\n c\r\n\r\n", RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, 30);
}
END_TEST

START_TEST(long_lines_are_handed_over_before_their_end)
{
    rp_scan_limits lim = { 20, 30, 3, 65536, 0 };
    char line[128];
    size_t used;

    memset(line, 'a', sizeof(line) - 1);
    line[sizeof(line) - 1] = 0;
    memcpy(line, "GET /", 5);
    ck_assert_int_eq(scan(&lim, line, 0, &used, NULL), RP_SCAN_HANDOVER);
    ck_assert_int_eq(scan(&lim, "GET / HTTP/1.1\r\nX: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                          1, &used, NULL), RP_SCAN_HANDOVER);
    /* Up to the limit is fine. */
    ck_assert_int_eq(scan(&lim, "GET /aaaaaa HTTP/1.1\r\nX: a\r\n\r\n", 1, &used, NULL),
                     RP_SCAN_WHOLE);
}
END_TEST

START_TEST(too_many_fields)
{
    rp_scan_limits lim = { 8190, 8190, 2, 65536, 0 };
    rp_reqscan s;
    size_t used;

    ck_assert_int_eq(scan(&lim, "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n", 0, &used, &s),
                     RP_SCAN_WHOLE);
    ck_assert_int_eq(scan(&lim, "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n", 0, &used, &s),
                     RP_SCAN_HANDOVER);
    ck_assert_int_eq(s.why, RP_SCAN_WHY_FIELDS);
}
END_TEST

START_TEST(head_larger_than_the_hold)
{
    rp_scan_limits lim = { 8190, 8190, 100, 40, 0 };
    rp_reqscan s;
    size_t used;

    ck_assert_int_eq(scan(&lim, "GET / HTTP/1.1\r\nX-a: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                          3, &used, &s), RP_SCAN_HANDOVER);
    ck_assert_int_eq(s.why, RP_SCAN_WHY_SIZE);
    /* A body that would not fit either. */
    ck_assert_int_eq(scan(&lim, "PUT / HTTP/1.1\r\nContent-Length: 30\r\n\r\n", 0, &used,
                          &s), RP_SCAN_HANDOVER);
    ck_assert_int_eq(s.why, RP_SCAN_WHY_SIZE);
}
END_TEST

START_TEST(body_beyond_memory_is_waited_for_up_to_body_hold)
{
    rp_scan_limits lim = { 8190, 8190, 100, 40, 100 };
    rp_reqscan s;
    size_t used;

    /* Fits in memory: read ahead there, not spooled. */
    ck_assert_int_eq(scan(&lim, "PUT / HTTP/1.1\r\n\r\n", 0, &used, &s), RP_SCAN_WHOLE);
    ck_assert_int_eq(scan(&lim, "PUT / HTTP/1.1\r\nContent-Length: 3\r\n\r\nab", 0, &used,
                          &s), RP_SCAN_MORE);
    ck_assert(!rp_reqscan_spools(&s));
    /* Longer than memory holds, within body_hold: waited for, spooled. */
    ck_assert_int_eq(scan(&lim, "PUT / HTTP/1.1\r\nContent-Length: 100\r\n\r\nab", 0,
                          &used, &s), RP_SCAN_MORE);
    ck_assert(rp_reqscan_spools(&s));
    ck_assert(rp_reqscan_in_body(&s));
    /* Past body_hold: httpd reads it itself. */
    ck_assert_int_eq(scan(&lim, "PUT / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 0,
                          &used, &s), RP_SCAN_HANDOVER);
    ck_assert_int_eq(s.why, RP_SCAN_WHY_SIZE);
    ck_assert(!rp_reqscan_spools(&s));
    /* A head longer than memory holds is still handed over. */
    ck_assert_int_eq(scan(&lim, "PUT / HTTP/1.1\r\nX-a: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 0,
                          &used, &s), RP_SCAN_HANDOVER);
    ck_assert_int_eq(s.why, RP_SCAN_WHY_SIZE);
}
END_TEST

START_TEST(http2_preface_head_is_whole)
{
    check_scan("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", RP_SCAN_WHOLE, RP_SCAN_WHY_NONE, 18);
}
END_TEST

START_TEST(done_uses_nothing_more)
{
    rp_reqscan s;
    size_t used;

    rp_reqscan_start(&s, &LIM);
    ck_assert_int_eq(rp_reqscan_feed(&s, GET, strlen(GET), &used), RP_SCAN_WHOLE);
    ck_assert_int_eq(rp_reqscan_feed(&s, GET, strlen(GET), &used), RP_SCAN_WHOLE);
    ck_assert_uint_eq(used, 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reqscan");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, get_whole_in_any_pieces);
    tcase_add_test(tc, pipelined_bytes_are_not_used);
    tcase_add_test(tc, incomplete_head_waits);
    tcase_add_test(tc, blank_lines_before_a_request);
    tcase_add_test(tc, http09_has_no_fields);
    tcase_add_test(tc, small_body_is_waited_for);
    tcase_add_test(tc, body_in_body_phase);
    tcase_add_test(tc, bodies_not_waited_for);
    tcase_add_test(tc, framing_httpd_refuses_is_handed_over);
    tcase_add_test(tc, folded_ordinary_field_is_fine);
    tcase_add_test(tc, long_lines_are_handed_over_before_their_end);
    tcase_add_test(tc, too_many_fields);
    tcase_add_test(tc, head_larger_than_the_hold);
    tcase_add_test(tc, body_beyond_memory_is_waited_for_up_to_body_hold);
    tcase_add_test(tc, http2_preface_head_is_whole);
    tcase_add_test(tc, done_uses_nothing_more);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
