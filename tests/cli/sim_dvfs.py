"""A simulated DVFS sweep CSV for the model/optimize CLI tests: six applications at 14 SM clocks,
power and run time from a fixed law (not measurements), in the columns `model fit` reads."""


def write_sim_dvfs_csv(path):
    rows = ["application,sm_app_clock,fp_active,dram_active,power_usage,run_time"]
    for i, (fp, dram) in enumerate([(.9, .1), (.5, .5), (.1, .9), (.3, .2), (.7, .6), (.2, .7)]):
        for clock in range(600, 1400, 60):
            u = clock / 1380
            rows.append(f"app{i},{clock},{fp},{dram},{60 + 220 * (fp * u ** 2.2 + 0.3 * dram * u):.4f},"
                        f"{10 * (fp / u + 1 - fp) * (1 + 0.003 * ((clock // 60 + i) % 3 - 1)):.4f}")
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")
