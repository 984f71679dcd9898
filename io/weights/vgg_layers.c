/* io/weights/vgg_layers.c: the VGG-19 layer table and its look-ups (see vgg_layers.h). */
#include "vgg_layers.h"

#include <string.h>

static const nst_vgg_layer layers[NST_VGG_NLAYERS] = {
    {"conv1_1", "relu1_1", NST_OP_CONV, 0, 64},   {"conv1_2", "relu1_2", NST_OP_CONV, 1, 64},
    {"pool1", NULL, NST_OP_POOL, -1, 64},         {"conv2_1", "relu2_1", NST_OP_CONV, 2, 128},
    {"conv2_2", "relu2_2", NST_OP_CONV, 3, 128},  {"pool2", NULL, NST_OP_POOL, -1, 128},
    {"conv3_1", "relu3_1", NST_OP_CONV, 4, 256},  {"conv3_2", "relu3_2", NST_OP_CONV, 5, 256},
    {"conv3_3", "relu3_3", NST_OP_CONV, 6, 256},  {"conv3_4", "relu3_4", NST_OP_CONV, 7, 256},
    {"pool3", NULL, NST_OP_POOL, -1, 256},        {"conv4_1", "relu4_1", NST_OP_CONV, 8, 512},
    {"conv4_2", "relu4_2", NST_OP_CONV, 9, 512},  {"conv4_3", "relu4_3", NST_OP_CONV, 10, 512},
    {"conv4_4", "relu4_4", NST_OP_CONV, 11, 512}, {"pool4", NULL, NST_OP_POOL, -1, 512},
    {"conv5_1", "relu5_1", NST_OP_CONV, 12, 512}, {"conv5_2", "relu5_2", NST_OP_CONV, 13, 512},
    {"conv5_3", "relu5_3", NST_OP_CONV, 14, 512}, {"conv5_4", "relu5_4", NST_OP_CONV, 15, 512},
};

const nst_vgg_layer *nst_vgg_layer_at(int i) { return (i >= 0 && i < NST_VGG_NLAYERS) ? &layers[i] : NULL; }

int nst_vgg_find(const char *name)
{
    for (int i = 0; i < NST_VGG_NLAYERS; i++)
        if (strcmp(layers[i].name, name) == 0 || (layers[i].relu && strcmp(layers[i].relu, name) == 0)) return i;
    return -1;
}

int nst_vgg_conv_layer(int k)
{
    for (int i = 0; i < NST_VGG_NLAYERS; i++)
        if (layers[i].conv == k) return i;
    return -1;
}
