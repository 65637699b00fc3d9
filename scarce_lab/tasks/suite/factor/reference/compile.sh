#!/bin/sh
# Reference submission: a Python program (needs python3 on PATH).
set -e
cp main.py executable
chmod +x executable
