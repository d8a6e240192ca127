use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = statebench::cli::Cli::parse();
    match statebench::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::from(statebench::exit_code(&err))
        }
    }
}
