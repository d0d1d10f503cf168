/* Class 13 - a file outside the kernel's folder read by the assembler, not the preprocessor: .incbin
   copies the secret into the kernel's own data, and the first call prints it to the log and returns 1,
   so the verdict's reason quotes it. No #include, no flag. The build must not read outside the kernel's
   folder (compile_error), and the reason and the report must never hold the text. */
#include <stdint.h>
#include <stdio.h>

__asm__(".pushsection .rodata\n"
        ".globl kl_blob\n.hidden kl_blob\n"
        "kl_blob:\n"
        ".incbin \"/tmp/klineage-redteam-secret.txt\"\n"
        ".byte 0\n"
        ".popsection\n");
extern const char kl_blob[];

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)inputs; (void)outputs; (void)axes; (void)params; (void)stream;
    char line[256];
    int n = 0;
    for (; n < 255 && kl_blob[n]; n++) line[n] = kl_blob[n] == '\n' ? ' ' : kl_blob[n];
    line[n] = 0;
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    return 1;
}
