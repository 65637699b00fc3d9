cc -O2 -o executable main.c
