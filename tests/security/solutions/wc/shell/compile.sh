cp main.sh executable
chmod +x executable
