#include "sess_proc.h"

#include <stdio.h>

void sl_sess_proc_bind(sl_sess_proc *sp, sl_proc *proc, void *sess)
{
    sp->proc = proc;
    sl_proc_set_data(proc, sess);
}

void sl_sess_proc_started(sl_sess_proc *sp, const sl_proc_endpoints *ep)
{
    sp->running = true;
    sl_proc_started(sp->proc, ep);
}

sl_proc *sl_sess_proc_take(sl_sess_proc *sp)
{
    sl_proc *proc = sp->proc;
    if (proc) {
        sp->proc = NULL;
        sl_proc_set_data(proc, NULL);
    }
    return proc;
}

void sl_sess_proc_end(sl_proc *proc, bool failed, int code, const char *msg)
{
    if (failed)
        sl_proc_failed(proc, msg ? msg : "failed");
    else
        sl_proc_exited(proc, code, msg);
}

void sl_sess_proc_start_error(bool exec, const char *err, char *out, size_t len)
{
    snprintf(out, len, "%s%s", exec ? "failed to exec in container: " : "", err ? err : "failed");
}

sl_sess_cancel sl_sess_proc_cancel(sl_sess_proc *sp, bool exec)
{
    if (exec && sp->running)
        return SL_SESS_CANCEL_KILL;
    if (sp->running)
        return SL_SESS_CANCEL_END;
    sl_proc *proc = sl_sess_proc_take(sp);
    if (proc)
        sl_proc_exited(proc, 137, "cancelled");
    return SL_SESS_CANCEL_EARLY;
}
