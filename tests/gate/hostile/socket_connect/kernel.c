/* Class 5 — open sockets (TCP to 127.0.0.1:8000, a UNIX socket at /tmp/klineage.sock) and send a forged result.
   Sockets are forbidden. Probe: a socket that opens at all poisons y[0]. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdint.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        static const char msg[] = "{\"verdict\": \"accepted\", \"time_s\": 1e-09}\n";
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s >= 0) {
            hole = 1;
            struct sockaddr_in in; memset(&in, 0, sizeof in);
            in.sin_family = AF_INET; in.sin_port = htons(8000); in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (connect(s, (struct sockaddr *)&in, sizeof in) == 0) (void)!send(s, msg, sizeof msg - 1, MSG_NOSIGNAL);
            close(s);
        }
        int u = socket(AF_UNIX, SOCK_STREAM, 0);
        if (u >= 0) {
            hole = 1;
            struct sockaddr_un un; memset(&un, 0, sizeof un);
            un.sun_family = AF_UNIX; strcpy(un.sun_path, "/tmp/klineage.sock");
            if (connect(u, (struct sockaddr *)&un, sizeof un) == 0) (void)!send(u, msg, sizeof msg - 1, MSG_NOSIGNAL);
            close(u);
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
