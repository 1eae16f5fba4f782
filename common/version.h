/* version.h - ncclscope's version (kept equal to meson.build's). */
#ifndef NSC_VERSION_H
#define NSC_VERSION_H
#define NSC_VERSION "0.1.0"
#endif
