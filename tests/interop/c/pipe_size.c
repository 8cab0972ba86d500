/* Prints the size of the pipe on stdin (F_GETPIPE_SZ), or "not a pipe"
 * with the errno name: how an exec sees sluiced's exec-stdin-pipe-size
 * from inside its container. Built static by exec_native.test.mjs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    int n = fcntl(0, F_GETPIPE_SZ);
    if (n < 0) {
        printf("not a pipe: %s\n", strerrorname_np(errno));
        return 1;
    }
    printf("%d\n", n);
    return 0;
}
