/* mod_reqtimeout's stages for each server, so the read-ahead waits for a
 * request by the same clocks as httpd's blocking reads would
 * (rp_rtimeout.h).  mod_reqtimeout keeps its values private, so they are
 * read from the configuration tree: RequestReadTimeout at server level
 * and in each <VirtualHost> (found by the file and line it was defined
 * at), merged and defaulted as mod_reqtimeout does.  Built at post_config
 * in the parent; children only read it. */
#include "rp.h"
#include "rp_rtimeout.h"

#include "apr_strings.h"

typedef struct rp_srv_conf {
    const rp_rt_conf *rt;       /* NULL: mod_reqtimeout does not apply */
} rp_srv_conf;

void *rp_rtconf_create_server(apr_pool_t *p, server_rec *s)
{
    (void)s;
    return apr_pcalloc(p, sizeof(rp_srv_conf));
}

/* Every virtual host gets its own (filled in at post_config); without a
 * merge, httpd would let them all share the main server's. */
void *rp_rtconf_merge_server(apr_pool_t *p, void *base, void *add)
{
    (void)base;
    (void)add;
    return apr_pcalloc(p, sizeof(rp_srv_conf));
}

const rp_rt_conf *rp_rtconf_for(const server_rec *s)
{
    const rp_srv_conf *sc = ap_get_module_config(s->module_config,
                                                 &mpm_reuseport_module);

    return sc ? sc->rt : NULL;
}

static int is_directive(const ap_directive_t *d, const char *name)
{
    return d->directive && !strcasecmp(d->directive, name);
}

/* Every RequestReadTimeout among the siblings from d on, in order. */
static void read_lines(const ap_directive_t *d, rp_rt_conf *c, server_rec *s)
{
    for (; d; d = d->next) {
        const char *why;
        if (!is_directive(d, "RequestReadTimeout")) {
            continue;
        }
        if ((why = rp_rt_parse(c, d->args ? d->args : ""))) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, RP_LOG_TAG
                         "RequestReadTimeout '%s' (%s:%d): %s; requests read "
                         "ahead there wait by mod_reqtimeout's defaults",
                         d->args, d->filename, d->line_num, why);
            rp_rt_unset(c);
        }
    }
}

static server_rec *vhost_defined_at(server_rec *main_s,
                                    const ap_directive_t *d)
{
    server_rec *s;

    for (s = main_s->next; s; s = s->next) {
        if ((int)s->defn_line_number == d->line_num && s->defn_name
            && d->filename && !strcmp(s->defn_name, d->filename)) {
            return s;
        }
    }
    return NULL;
}

static void set_for(apr_pool_t *p, server_rec *s, const rp_rt_conf *merged)
{
    rp_srv_conf *sc = ap_get_module_config(s->module_config,
                                           &mpm_reuseport_module);
    rp_rt_conf *rt;

    if (!sc) {
        return;
    }
    if (!rp_rt_applies(merged)) {
        sc->rt = NULL;          /* every stage off: the module stays out */
        return;
    }
    rt = apr_pmemdup(p, merged, sizeof(*merged));
    rp_rt_resolve(rt);
    sc->rt = rt;
}

int rp_rtconf_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *main_s)
{
    const ap_directive_t *d;
    rp_rt_conf main_rt;
    server_rec *s;

    (void)plog;
    (void)ptemp;
    for (s = main_s; s; s = s->next) {
        rp_srv_conf *sc = ap_get_module_config(s->module_config,
                                               &mpm_reuseport_module);
        if (sc) {
            sc->rt = NULL;
        }
    }
    if (!ap_find_linked_module("mod_reqtimeout.c")) {
        return OK;              /* Timeout alone applies */
    }
    rp_rt_unset(&main_rt);
    read_lines(ap_conftree, &main_rt, main_s);
    set_for(pconf, main_s, &main_rt);
    for (s = main_s->next; s; s = s->next) {
        set_for(pconf, s, &main_rt);    /* vhosts without their own lines */
    }
    for (d = ap_conftree; d; d = d->next) {
        rp_rt_conf own, merged;
        if (!is_directive(d, "<VirtualHost")
            || !(s = vhost_defined_at(main_s, d))) {
            continue;
        }
        rp_rt_unset(&own);
        read_lines(d->first_child, &own, s);
        rp_rt_merge(&merged, &main_rt, &own);
        set_for(pconf, s, &merged);
    }
    return OK;
}
