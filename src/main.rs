use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = statebench::cli::Cli::parse();
    // A reader that closes the output early (`| head`) ends the command quietly.
    statebench::output::until_closed_pipe(|| statebench::run(cli)).exit_code()
}
