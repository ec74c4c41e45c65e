#include "lib.h"
int fb(int x) { return x * 2; }
