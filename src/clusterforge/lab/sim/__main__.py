from clusterforge.lab.sim.main import main

main()
