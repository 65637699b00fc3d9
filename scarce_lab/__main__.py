from scarce_lab.cli import main

main()
