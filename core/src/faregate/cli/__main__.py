from faregate.cli import main

main()
