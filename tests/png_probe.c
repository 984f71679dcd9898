/* tests/png_probe.c: print "WIDTHxHEIGHT BITS" of a PNG using libpng directly (not nstbatch's
 * reader), for the end-to-end test. */
#include <png.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: png_probe FILE.png\n"), 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 1;
    png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(p);
    if (setjmp(png_jmpbuf(p))) return fprintf(stderr, "%s: not a readable PNG\n", argv[1]), 1;
    png_init_io(p, f);
    png_read_info(p, info);
    printf("%ux%u %d\n", png_get_image_width(p, info), png_get_image_height(p, info), png_get_bit_depth(p, info));
    png_destroy_read_struct(&p, &info, NULL);
    fclose(f);
    return 0;
}
