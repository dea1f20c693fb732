# baton's leader-tag reconciler for one Auto Scaling group: SNS notifications and a schedule
# trigger a Lambda that keeps the leader tag on exactly one InService member (docs/aws.md).
# Also: a termination lifecycle hook for `baton aws watch-termination`, and the instance policy.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws     = { source = "hashicorp/aws", version = ">= 5.0" }
    archive = { source = "hashicorp/archive", version = ">= 2.4" }
  }
}

variable "asg_name" {
  description = "Name of the existing Auto Scaling group."
  type        = string
}

variable "leader_tag" {
  description = "Tag key that marks the leader (BATON_LEADER_TAG)."
  type        = string
  default     = "app:isLeader"
}

variable "sweep_schedule" {
  description = "How often the safety-net sweep runs."
  type        = string
  default     = "rate(5 minutes)"
}

data "aws_autoscaling_group" "this" {
  name = var.asg_name
}

data "aws_partition" "current" {}
data "aws_caller_identity" "current" {}

locals {
  name          = "${var.asg_name}-baton-leader"
  instance_arns = "arn:${data.aws_partition.current.partition}:ec2:*:${data.aws_caller_identity.current.account_id}:instance/*"
}

# --- Notifications: the group tells SNS about launches and terminations ------------------------

resource "aws_sns_topic" "asg_events" {
  name = local.name
}

resource "aws_autoscaling_notification" "this" {
  group_names = [var.asg_name]
  topic_arn   = aws_sns_topic.asg_events.arn
  notifications = [
    "autoscaling:EC2_INSTANCE_LAUNCH",
    "autoscaling:EC2_INSTANCE_TERMINATE",
    "autoscaling:EC2_INSTANCE_LAUNCH_ERROR",
    "autoscaling:EC2_INSTANCE_TERMINATE_ERROR",
  ]
}

# --- The reconciler ----------------------------------------------------------------------------

data "archive_file" "reconciler" {
  type        = "zip"
  source_dir  = "${path.module}/lambda" # run `npm install --omit=dev` in lambda/ first
  output_path = "${path.module}/build/reconciler.zip"
}

resource "aws_cloudwatch_log_group" "reconciler" {
  name              = "/aws/lambda/${local.name}"
  retention_in_days = 14
}

resource "aws_iam_role" "reconciler" {
  name = local.name
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_iam_role_policy" "reconciler" {
  name = "reconcile-leader-tag"
  role = aws_iam_role.reconciler.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        # Describe calls have no resource-level permissions.
        Sid      = "Read"
        Effect   = "Allow"
        Action   = ["autoscaling:DescribeAutoScalingGroups", "ec2:DescribeTags"]
        Resource = "*"
      },
      {
        # Only the leader tag, only on this group's instances (terminated ones keep the group tag).
        Sid      = "WriteLeaderTagOnThisGroup"
        Effect   = "Allow"
        Action   = ["ec2:CreateTags", "ec2:DeleteTags"]
        Resource = local.instance_arns
        Condition = {
          StringEquals                = { "aws:ResourceTag/aws:autoscaling:groupName" = var.asg_name }
          "ForAllValues:StringEquals" = { "aws:TagKeys" = [var.leader_tag] }
        }
      },
      {
        Sid      = "Logs"
        Effect   = "Allow"
        Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
        Resource = "${aws_cloudwatch_log_group.reconciler.arn}:*"
      },
    ]
  })
}

resource "aws_lambda_function" "reconciler" {
  function_name    = local.name
  role             = aws_iam_role.reconciler.arn
  runtime          = "nodejs20.x"
  handler          = "index.handler"
  filename         = data.archive_file.reconciler.output_path
  source_code_hash = data.archive_file.reconciler.output_base64sha256
  timeout          = 60
  memory_size      = 256
  # One run at a time: concurrent runs are safe, but serialising them removes even the brief
  # two-tagged window two runs with different views could open (docs/aws.md).
  reserved_concurrent_executions = 1

  environment {
    variables = {
      BATON_LEADER_TAG = var.leader_tag
      BATON_GROUPS     = var.asg_name # what the scheduled sweep reconciles
    }
  }

  depends_on = [aws_cloudwatch_log_group.reconciler, aws_iam_role_policy.reconciler]
}

resource "aws_lambda_function_event_invoke_config" "reconciler" {
  function_name                = aws_lambda_function.reconciler.function_name
  maximum_retry_attempts       = 2
  maximum_event_age_in_seconds = 3600 # older events add nothing: the sweep has run since
}

resource "aws_sns_topic_subscription" "reconciler" {
  topic_arn = aws_sns_topic.asg_events.arn
  protocol  = "lambda"
  endpoint  = aws_lambda_function.reconciler.arn
}

resource "aws_lambda_permission" "sns" {
  statement_id  = "AllowAutoScalingNotifications"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.reconciler.function_name
  principal     = "sns.amazonaws.com"
  source_arn    = aws_sns_topic.asg_events.arn
}

# --- The safety net: a scheduled sweep repairs whatever a lost notification left ---------------

resource "aws_cloudwatch_event_rule" "sweep" {
  name                = "${local.name}-sweep"
  schedule_expression = var.sweep_schedule
}

resource "aws_cloudwatch_event_target" "sweep" {
  rule = aws_cloudwatch_event_rule.sweep.name
  arn  = aws_lambda_function.reconciler.arn
}

resource "aws_lambda_permission" "sweep" {
  statement_id  = "AllowScheduledSweep"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.reconciler.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.sweep.arn
}

# --- Hand-over before termination (`baton aws watch-termination --hook baton-drain`) ----------

resource "aws_autoscaling_lifecycle_hook" "drain" {
  name                   = "baton-drain"
  autoscaling_group_name = var.asg_name
  lifecycle_transition   = "autoscaling:EC2_INSTANCE_TERMINATING"
  heartbeat_timeout      = 300        # upper bound; drain completes the action as soon as it is done
  default_result         = "CONTINUE" # if nothing completes it, terminate anyway
}

# --- What the instances need: attach this to the group's instance role -------------------------

resource "aws_iam_policy" "instance" {
  name = "${local.name}-instance"
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        # is-leader --strategy asg-lowest; drain's lookup of its own group.
        Sid      = "DescribeGroup"
        Effect   = "Allow"
        Action   = ["autoscaling:DescribeAutoScalingInstances", "autoscaling:DescribeAutoScalingGroups"]
        Resource = "*"
      },
      {
        # is-leader --strategy asg-tag, only when tags are not in instance metadata.
        Sid      = "ReadTagsFallback"
        Effect   = "Allow"
        Action   = "ec2:DescribeTags"
        Resource = "*"
      },
      {
        Sid      = "CompleteOwnGroupsLifecycleActions"
        Effect   = "Allow"
        Action   = "autoscaling:CompleteLifecycleAction"
        Resource = data.aws_autoscaling_group.this.arn
      },
    ]
  })
}

output "instance_policy_arn" {
  description = "Attach to the instance role of the group."
  value       = aws_iam_policy.instance.arn
}

output "reconciler_function" {
  value = aws_lambda_function.reconciler.function_name
}
