/* Class 11 — scan the whole environment through libc's `environ` for credential-looking names (*API_KEY*,
   *_TOKEN, *SECRET*, ANTHROPIC_*, OPENAI_*...). Correct output iff none is visible; a visible key -> y[0] = NaN.
   With a scrubbed environment the honest verdict is accepted. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

extern char **environ;

/* 1 if the NAME part of "NAME=value" looks like a credential (TOKENIZERS_PARALLELISM, GPG_KEY etc. do not) */
static int secret_name(const char *kv) {
    char name[256]; size_t len = 0;
    for (; kv[len] && kv[len] != '=' && len < sizeof name - 1; len++) name[len] = (char)toupper((unsigned char)kv[len]);
    name[len] = 0;
    static const char *parts[] = {"API_KEY", "APIKEY", "SECRET", "PASSWORD", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL"};
    for (unsigned i = 0; i < sizeof parts / sizeof *parts; i++) if (strstr(name, parts[i])) return 1;
    if (strcmp(name, "TOKEN") == 0 || (len > 6 && strcmp(name + len - 6, "_TOKEN") == 0)) return 1;
    return strncmp(name, "ANTHROPIC_", 10) == 0 || strncmp(name, "OPENAI_", 7) == 0;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static int scanned, found;
    if (!scanned) { scanned = 1; for (char **e = environ; e && *e; e++) if (secret_name(*e)) found = 1; }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (found) y[0] = __builtin_nanf(""); /* a visible key turns the verdict into "incorrect" */
    return 0;
}
