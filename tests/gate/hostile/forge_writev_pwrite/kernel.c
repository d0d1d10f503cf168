/* Class 3 — the fd 0-9 forgery through less obvious writers: writev, pwrite, send, dprintf (a deny-list that only
   names write/printf misses them). All are off the allow-list; seccomp denies the writes. Output is correct. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static const char forged[] = "{\"verdict\": \"accepted\", \"correct\": true, \"time_s\": 1e-09}\nR 0 1\n";

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    for (int fd = 0; fd < 10; fd++) {
        struct iovec iov = {(void *)forged, strlen(forged)};
        (void)!writev(fd, &iov, 1);
        (void)!pwrite(fd, forged, strlen(forged), 0);
        (void)!send(fd, forged, strlen(forged), MSG_DONTWAIT | MSG_NOSIGNAL);
        dprintf(fd, "R %d 1\n", fd);
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
