/* Pure recycling policy; see wn_reuse_policy.h. */
#include "wn_reuse_policy.h"

wn_reuse_method wn_reuse_choose(wn_reuse_mode mode, int tf_ok, int dx_ok)
{
    switch (mode) {
    case WN_REUSE_TRANSMITFILE:
        return tf_ok ? WN_METHOD_TRANSMITFILE : WN_METHOD_CLOSE;
    case WN_REUSE_DISCONNECTEX:
        return dx_ok ? WN_METHOD_DISCONNECTEX : WN_METHOD_CLOSE;
    case WN_REUSE_AUTO:
        if (tf_ok)
            return WN_METHOD_TRANSMITFILE;
        return dx_ok ? WN_METHOD_DISCONNECTEX : WN_METHOD_CLOSE;
    case WN_REUSE_OFF:
    default:
        return WN_METHOD_CLOSE;
    }
}

void wn_reuse_init(wn_reuse_state *st, wn_reuse_method method,
                   int server_first)
{
    st->method = method;
    st->server_first = method != WN_METHOD_CLOSE && server_first;
    st->broken_in_a_row = 0;
    st->good_in_a_row = 0;
    st->trusted = 0;
    st->disabled = 0;
}

int wn_reuse_note(wn_reuse_state *st, int recycled_socket, int broke)
{
    if (st->disabled || st->method == WN_METHOD_CLOSE)
        return 0;
    if (!broke) {
        if (recycled_socket) {
            st->broken_in_a_row = 0;
            if (++st->good_in_a_row >= WN_REUSE_TRUST_AFTER)
                st->trusted = 1;
        }
        return 0;
    }
    st->good_in_a_row = 0;
    if (!recycled_socket) {
        /* Fresh sockets break too: clients, not recycling. */
        st->broken_in_a_row = 0;
        return 0;
    }
    if (++st->broken_in_a_row < WN_REUSE_MAX_BROKEN)
        return 0;
    st->disabled = 1;
    st->method = WN_METHOD_CLOSE;
    st->server_first = 0;
    return 1;
}

int wn_reuse_needs_check(const wn_reuse_state *st)
{
    /* Also after recycling was turned off: sockets recycled before that
     * are still in the pool. */
    return !st->trusted;
}

void wn_client_first_init(wn_client_first *cf)
{
    cf->recent = ~0u;         /* until seen otherwise, clients close first */
    cf->not_waited = 0;
}

int wn_client_first_wait(wn_client_first *cf)
{
    if (cf->recent || ++cf->not_waited >= WN_CLIENT_FIRST_PROBE) {
        cf->not_waited = 0;
        return 1;
    }
    return 0;
}

void wn_client_first_note(wn_client_first *cf, int closed_first)
{
    cf->recent = (cf->recent << 1) | (closed_first ? 1u : 0u);
}
