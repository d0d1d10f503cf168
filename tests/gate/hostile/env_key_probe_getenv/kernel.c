/* Class 11 — getenv() the well-known credential variables by name (OPENAI_API_KEY, ANTHROPIC_API_KEY, HF_TOKEN,
   GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, ...). Correct output iff none is set; a visible key -> y[0] = NaN. */
#include <stdint.h>
#include <stdlib.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static int scanned, found;
    if (!scanned) {
        scanned = 1;
        static const char *names[] = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HF_TOKEN",
                                      "HUGGING_FACE_HUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY",
                                      "AWS_SESSION_TOKEN", "GOOGLE_API_KEY", "GEMINI_API_KEY", "WANDB_API_KEY",
                                      "AZURE_OPENAI_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY", "CO_API_KEY"};
        for (unsigned i = 0; i < sizeof names / sizeof *names; i++) { const char *v = getenv(names[i]); if (v && *v) found = 1; }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (found) y[0] = __builtin_nanf(""); /* a visible key turns the verdict into "incorrect" */
    return 0;
}
