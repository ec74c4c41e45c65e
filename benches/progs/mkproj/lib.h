int fa(int);
int fb(int);
int fc(int);
