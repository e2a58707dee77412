// The charting library embedded at build time (see src/report/CMakeLists.txt and assets.hpp).
// .incbin copies the file into .rodata without a multi-megabyte C++ array to compile.
#ifndef JOULEPROF_ECHARTS_EMBED_PATH
#error "JOULEPROF_ECHARTS_EMBED_PATH must name echarts.min.js"
#endif

__asm__(
    ".section .rodata.jp_echarts,\"a\",@progbits\n"
    ".global jp_echarts_begin\n"
    ".hidden jp_echarts_begin\n"
    "jp_echarts_begin:\n"
    ".incbin \"" JOULEPROF_ECHARTS_EMBED_PATH "\"\n"
    ".global jp_echarts_end\n"
    ".hidden jp_echarts_end\n"
    "jp_echarts_end:\n"
    ".byte 0\n"
    ".previous\n");
